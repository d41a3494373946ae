/**
 * The native-format providers' transforms (and Anthropic's inbound format) stay out of the code a
 * gateway cold start loads: they are imported on first use, into chunks of their own.
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';

const HANDLER = fileURLToPath(new URL('../../../lambdas/gateway/handler.ts', import.meta.url));

describe('gateway bundle, split', () => {
  let meta: Metafile;

  beforeAll(async () => {
    const result = await build({
      entryPoints: [HANDLER],
      bundle: true,
      splitting: true,
      platform: 'node',
      format: 'esm',
      target: 'node24',
      external: ['@aws-sdk/*'],
      outdir: path.join(os.tmpdir(), 'gantry-native-lazy'),
      metafile: true,
      write: false,
      logLevel: 'silent',
    });
    meta = result.metafile;
  });

  /** The inputs of the entry chunk and of every chunk it imports statically. */
  function eagerInputs(): string[] {
    const outputs = meta.outputs;
    // The handler's own chunk: lazily imported modules are entry points of their chunks too.
    const entry = Object.keys(outputs).find((o) => outputs[o]?.entryPoint?.endsWith('lambdas/gateway/handler.ts'));
    const seen = new Set<string>();
    const inputs: string[] = [];
    const visit = (name: string) => {
      if (seen.has(name) || !outputs[name]) return;
      seen.add(name);
      inputs.push(...Object.keys(outputs[name].inputs));
      for (const imp of outputs[name].imports) if (imp.kind === 'import-statement' && !imp.external) visit(imp.path);
    };
    if (entry) visit(entry);
    return inputs;
  }

  it('loads no native provider module, no SigV4 signer and no Anthropic conversion at cold start', () => {
    const eager = eagerInputs();
    expect(eager.length).toBeGreaterThan(0);
    expect(
      eager.filter(
        (i) => i.includes('providers/native/') || i.includes('@smithy/') || i.endsWith('gateway/anthropic-inbound.ts') || i.endsWith('gateway/messages.ts'),
      ),
    ).toEqual([]);
    // The registry still knows them, as data.
    expect(eager.some((i) => i.endsWith('providers/native-declarations.ts'))).toBe(true);
  });

  it('loads the SQS client on the first log event sent, not at cold start', () => {
    const outputs = meta.outputs;
    const eager = new Set<string>();
    const visit = (name: string) => {
      if (eager.has(name) || !outputs[name]) return;
      eager.add(name);
      for (const imp of outputs[name].imports) if (imp.kind === 'import-statement' && !imp.external) visit(imp.path);
    };
    const entry = Object.keys(outputs).find((o) => outputs[o]?.entryPoint?.endsWith('lambdas/gateway/handler.ts'));
    if (entry) visit(entry);
    const staticSdk = [...eager].flatMap((name) => outputs[name]!.imports.filter((i) => i.kind === 'import-statement').map((i) => i.path));
    expect(staticSdk).toContain('@aws-sdk/client-dynamodb');
    expect(staticSdk).not.toContain('@aws-sdk/client-sqs');
    const dynamic = Object.values(outputs).flatMap((o) => o.imports.filter((i) => i.kind === 'dynamic-import').map((i) => i.path));
    expect(dynamic).toContain('@aws-sdk/client-sqs');
  });

  it('emits them in lazily imported chunks', () => {
    const all = Object.values(meta.outputs).flatMap((o) => Object.keys(o.inputs));
    expect(all.some((i) => i.endsWith('providers/native/bedrock.ts'))).toBe(true);
    expect(all.some((i) => i.endsWith('gateway/messages.ts'))).toBe(true);
  });
});
