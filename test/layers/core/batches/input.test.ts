/**
 * A batch's input file judged when a batch is created on it (the upload took any UTF-8 lines): each
 * bad line's `errors.data` entry (`code`, `message`, `param`, `line` from 1), its custom_id kept when
 * it has one (for its error-file line), the first 1,000 reported, and the lines counted.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkedLines, validateInput } from '../../../../layers/core/src/batches/input.ts';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { FsBlobStore } from '../../../../layers/core/src/ports/local/blob-fs.ts';

const blobs = new FsBlobStore(mkdtempSync(path.join(os.tmpdir(), 'gantry-batch-input-')));
// The input is read from blob storage only.
const deps = { blobs } as unknown as CoreDeps;
const CHAT = '/v1/chat/completions';

const chat = (custom_id: string, body: Record<string, unknown> = {}, url = CHAT, method = 'POST') =>
  JSON.stringify({ custom_id, method, url, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...body } });

let n = 0;
async function stored(text: string): Promise<string> {
  const key = `in/${n++}`;
  await blobs.put(key, Buffer.from(text));
  return key;
}

describe('validateInput', () => {
  it('names each bad line with its code, param and 1-based line', async () => {
    const lines = [
      `\uFEFF${chat('bom')}`,
      '{not json',
      '',
      '[1, 2]',
      JSON.stringify({ method: 'POST', url: CHAT, body: {} }),
      chat('get', {}, CHAT, 'GET'),
      chat('rel', {}, 'chat/completions'),
      JSON.stringify({ custom_id: 'nobody', method: 'POST', url: CHAT }),
      chat('emb', {}, '/v1/embeddings'),
      chat('bom'),
      chat('s', { stream: true }),
      chat('t', { temperature: 5 }),
      chat('ok'),
    ];
    const checked = await validateInput(deps, await stored(lines.join('\r\n')), CHAT);
    expect(checked.total).toBe(13);
    expect(checked.errors).toEqual([
      { code: 'invalid_json_line', message: 'The line is not valid JSON.', param: null, line: 2 },
      { code: 'empty_line', message: 'The line is empty.', param: null, line: 3 },
      { code: 'invalid_request', message: 'The line is not a JSON object.', param: null, line: 4 },
      { code: 'invalid_request', message: "The line's custom_id must be a non-empty string.", param: 'custom_id', line: 5 },
      { code: 'invalid_request', message: 'The line\'s method must be "POST".', param: 'method', line: 6 },
      { code: 'invalid_request', message: "The line's url must be a /v1/ path, e.g. /v1/chat/completions.", param: 'url', line: 7 },
      { code: 'invalid_request', message: "The line's body must be a JSON object.", param: 'body', line: 8 },
      { code: 'mismatched_endpoint', message: "The line's url /v1/embeddings is not the batch's endpoint /v1/chat/completions.", param: 'url', line: 9 },
      { code: 'duplicate_custom_id', message: 'custom_id "bom" is already used on line 1.', param: 'custom_id', line: 10 },
      { code: 'invalid_request', message: 'A batch line cannot stream.', param: 'body.stream', line: 11 },
      { code: 'invalid_request', message: expect.stringContaining('temperature'), param: 'body.temperature', line: 12 },
    ]);
  });

  it('keeps the custom_id of a bad line that has one, and the parsed line of a good one', async () => {
    const key = await stored([chat('a'), '{', chat('b', {}, CHAT, 'GET'), JSON.stringify({ custom_id: 7 })].join('\n'));
    const out = [];
    for await (const { index, check } of checkedLines(deps, key, CHAT))
      out.push({ index, ok: check.ok, custom_id: check.ok ? check.line.custom_id : check.custom_id });
    expect(out).toEqual([
      { index: 0, ok: true, custom_id: 'a' },
      { index: 1, ok: false, custom_id: null },
      { index: 2, ok: false, custom_id: 'b' },
      { index: 3, ok: false, custom_id: null },
    ]);
  });

  it('reports an empty file, and at most 1,000 problems while counting every line', async () => {
    expect(await validateInput(deps, await stored(''), CHAT)).toEqual({
      total: 0,
      errors: [{ code: 'empty_file', message: 'The input file has no lines.', param: 'input_file_id', line: null }],
    });
    const many = await validateInput(deps, await stored(Array.from({ length: 1200 }, () => 'x').join('\n')), CHAT);
    expect(many.total).toBe(1200);
    expect(many.errors).toHaveLength(1000);
    expect(many.errors.at(-1)?.line).toBe(1000);
  });
});
