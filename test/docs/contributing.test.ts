/**
 * CONTRIBUTING.md's code examples are real: each TypeScript block names, in the comment above it
 * (`<!-- from: layers/core/src/gateway/pipeline.ts -->`), the file it is taken from, and must still
 * be found there word for word (spacing aside). The page's illustrative examples live in
 * test/docs/examples/contributing.ts, which the type check compiles and this test imports, so an
 * example that no longer fits the contract it shows fails here or in `tsc`, not in a reader's hands.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { GatewayRecord, TargetAdmission } from '../../layers/core/src/kernel/lifecycle.ts';
import { ForbiddenError } from '../../layers/core/src/http/errors.ts';
import { auditHook, responsesDialect } from './examples/contributing.ts';
import { codeBlocks, read, ROOT } from './markdown.ts';

const BLOCKS = codeBlocks(read('CONTRIBUTING.md')).filter((b) => b.lang === 'ts' || b.lang === 'typescript');
const squash = (code: string): string => code.replace(/\s+/g, ' ').trim();

describe("CONTRIBUTING.md's code blocks", () => {
  it('has TypeScript examples', () => {
    expect(BLOCKS.length).toBeGreaterThanOrEqual(4);
  });

  it.each(BLOCKS.map((b, i) => ({ n: i + 1, ...b })))('block $n is found, as written, in the file it names', ({ code, before }) => {
    const from = /^<!-- from: (\S+) -->$/.exec(before)?.[1];
    expect(from, `the line above the block must be <!-- from: <path> -->, not: ${before}`).toBeDefined();
    expect(existsSync(path.join(ROOT, from as string)), `${from} does not exist`).toBe(true);
    expect(squash(read(from as string)), `${from} no longer holds:\n${code}`).toContain(squash(code));
  });
});

describe('the illustrative examples work as the page says', () => {
  const record = {} as GatewayRecord;
  const target = (provider: string): TargetAdmission => ({ targetPath: 'config', provider, model: 'gpt-4o-mini' });

  it('auditHook refuses only the target it forbids, so a fallback goes on', async () => {
    const refusal = await auditHook.admitTarget?.(record, target('forbidden'));
    expect(refusal).toBeInstanceOf(ForbiddenError);
    expect(refusal).toMatchObject({ status: 403, code: 'AB03' });
    expect(await auditHook.admitTarget?.(record, target('openai'))).toBeUndefined();
  });

  it("responsesDialect keeps the headers and renders refusals in OpenAI's shape", () => {
    const headers = new Headers({ 'x-gw-api-key': 'gw_x' });
    expect(responsesDialect.inbound(headers).headers).toBe(headers);
    expect(responsesDialect.refusalBody(new ForbiddenError('not here'))).toEqual({
      error: { message: 'not here', type: 'permission_error', param: null, code: 'forbidden' },
    });
  });
});
