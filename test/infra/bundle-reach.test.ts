/**
 * What a function's bundle reaches (esbuild's metafile of the build `cdk synth` makes): the
 * log-ingest worker is built from the table, its queue, a clock and a logger, so it carries none
 * of the gateway, the admin API, the providers or the AWS clients it never calls.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildLambda } from '../../infra/lambda-code.ts';
import { LOG_INGEST_ENTRY } from '../../infra/stacks/observability-stack.ts';

const out = mkdtempSync(path.join(tmpdir(), 'gantry-reach-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('the log-ingest bundle', () => {
  const inputs = Object.keys(buildLambda(LOG_INGEST_ENTRY, out).inputs);
  const own = inputs.filter((f) => !f.includes('node_modules/'));

  it('reaches only the ingest path of the core', () => {
    const foreign = own.filter((f) => /layers\/core\/src\/(gateway|admin|mcp|guardrails|providers|policy|prompts|pricing|batches|secrets)\//.test(f));
    expect(foreign).toEqual([]);
    expect(own).toContain('layers/core/src/observability/ingest.ts');
    expect(own.length).toBeLessThanOrEqual(30);
  });

  it('bundles no AWS client but DynamoDB and SQS', () => {
    const clients = new Set(inputs.map((f) => /node_modules\/@aws-sdk\/(client-[a-z0-9-]+)\//.exec(f)?.[1]).filter((c) => c !== undefined));
    expect([...clients].sort()).toEqual(['client-dynamodb', 'client-sqs']);
  });
});
