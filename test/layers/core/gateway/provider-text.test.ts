/**
 * The text input hooks read of requests in a provider's own format: the passthrough's every
 * string (escapes undone, duplicate keys kept, non-JSON bodies as they are), the assistants
 * family's texts with their roles, and the batch lines of an upload.
 */
import { describe, expect, it } from 'vitest';
import { GantryError } from '../../../../layers/core/src/http/errors.ts';
import {
  batchLinesParts,
  batchLinesText,
  MAX_CHECKED_TEXT,
  providerRequestParts,
  proxyRequestParts,
  proxyRequestText,
} from '../../../../layers/core/src/gateway/provider-text.ts';
import { multipart } from '../../../support/media.ts';

const raw = (text: string, contentType = 'application/json') => ({ kind: 'raw' as const, bytes: new TextEncoder().encode(text), contentType });
const texts = (parts: ReadonlyArray<{ text: string }>) => parts.map((p) => p.text);

describe('proxyRequestText: a JSON value of the passthrough', () => {
  it('reads every string value at any depth, and nothing else', () => {
    const json = { model: 'x', n: 2, ok: true, nested: { list: ['a', { deep: [['b']] }], none: null } };
    expect(proxyRequestText('/vector_stores/vs_1/search', json)).toBe('x\na\nb');
  });

  it('reads a Gemini-style body', () => {
    const json = { contents: [{ role: 'user', parts: [{ text: 'hello' }, { inlineData: { mimeType: 'image/png', data: 'AAAA' } }] }] };
    expect(proxyRequestText('/models/gemini:generateContent', json)).toContain('hello');
  });

  it('survives a value nested far deeper than any recursion would', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(proxyRequestText('/x', { deep })).toBe('bottom');
  });
});

describe('proxyRequestParts: a body as text', () => {
  it('reads JSON escapes undone and both values of a duplicate key', () => {
    const parts = proxyRequestParts('/custom', '{"prompt": "\\u0067lpat-1", "prompt": "fine"}');
    expect(texts(parts)).toEqual(['prompt', 'glpat-1', 'prompt', 'fine']);
  });

  it('reads a body that is not JSON as the text it is, and the JSON strings inside it', () => {
    const parts = proxyRequestParts('/custom', 'line one {"a": "b\\u0021"}\n{"c": "d"}');
    expect(texts(parts)).toEqual(['line one {"a": "b\\u0021"}\n{"c": "d"}', 'a', 'b!', 'c', 'd']);
    expect(proxyRequestParts('/custom', '')).toEqual([]);
  });

  it('keeps a string literal with a bad escape as written', () => {
    expect(texts(proxyRequestParts('/custom', '["ok\\x"]'))).toContain('ok\\x');
  });
});

describe('proxyRequestParts: the assistants family', () => {
  it('reads a message, with its role, as a string or as parts', () => {
    expect(proxyRequestParts('/threads/{thread_id}/messages', { role: 'user', content: 'hi', metadata: { a: 'no' } })).toEqual([{ role: 'user', text: 'hi' }]);
    expect(
      proxyRequestParts('/threads/{thread_id}/messages', {
        role: 'assistant',
        content: [
          { type: 'text', text: 'x' },
          { type: 'image_file', image_file: { file_id: 'f' } },
        ],
      }),
    ).toEqual([{ role: 'assistant', text: 'x' }]);
  });

  it('reads thread creation, runs, tool outputs and assistants, wherever they stand in the family', () => {
    const json = {
      assistant_id: 'asst_1',
      model: 'gpt-4o',
      instructions: 'be brief',
      additional_instructions: 'and kind',
      messages: [{ role: 'user', content: 'm1' }],
      thread: { messages: [{ role: 'user', content: [{ type: 'text', text: 'm2' }] }] },
      additional_messages: [{ role: 'assistant', content: 'm3' }],
      tool_outputs: [{ tool_call_id: 'c', output: 'o1' }],
      tools: [{ type: 'function', function: { name: 'f', description: 'looks up' } }],
    };
    const parts = proxyRequestParts('/threads/runs', json);
    expect(parts).toEqual(
      expect.arrayContaining([
        { role: 'system', text: 'be brief' },
        { role: 'system', text: 'and kind' },
        { role: 'user', text: 'm1' },
        { role: 'user', text: 'm2' },
        { role: 'assistant', text: 'm3' },
        { role: 'tool', text: 'o1' },
        { role: 'tool', text: 'looks up' },
      ]),
    );
    expect(texts(parts)).not.toContain('asst_1');
    expect(texts(proxyRequestParts('/assistants', json))).toEqual(texts(parts));
    // A variant spelling of the family reads the same.
    expect(texts(proxyRequestParts('/Threads//runs', json))).toEqual(texts(parts));
  });
});

const line = (id: string, url: string, body: unknown) => JSON.stringify({ custom_id: id, method: 'POST', url, body });

describe('batchLinesParts', () => {
  it("reads each line's body as its endpoint reads it", () => {
    const file = [
      line('1', '/v1/chat/completions', {
        model: 'm',
        messages: [
          { role: 'system', content: 'sys' },
          { role: 'user', content: 'u1' },
        ],
      }),
      line('2', '/v1/embeddings', { model: 'e', input: ['e1', 'e2'] }),
      line('3', '/v1/completions', { model: 'c', prompt: 'p1' }),
      line('4', '/v1/responses', { model: 'r', input: 'r1', instructions: 'i1' }),
    ].join('\n');
    expect(texts(batchLinesParts(file))).toEqual(['sys', 'u1', 'e1', 'e2', 'p1', 'i1', 'r1']);
    expect(batchLinesParts(file)[0]).toEqual({ role: 'system', text: 'sys' });
  });

  it('reads a line for an unknown or variant url as every string of its body', () => {
    expect(texts(batchLinesParts(line('1', '/v1/Chat/Completions/', { model: 'm', messages: [{ role: 'user', content: 'u' }] })))).toEqual(['u']);
    expect(texts(batchLinesParts(line('1', '/v1/other', { model: 'm', query: { q: 'x' } })))).toEqual(['m', 'x']);
  });

  it('finds the lines inside a whole multipart body, with CRLF, a byte order mark and escapes', () => {
    const file = `\uFEFF${line('1', '/v1/chat/completions', { messages: [{ role: 'user', content: 'first' }] })}\r\n${line('2', '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }] }).replace('"x"', '"\\u0067lpat"')}\r\n`;
    const form = multipart([
      { name: 'purpose', value: 'batch' },
      { name: 'file', value: Buffer.from(file), filename: 'b.jsonl', type: 'application/jsonl' },
    ]);
    expect(texts(batchLinesParts(form.body))).toEqual(['first', 'glpat']);
    expect(batchLinesText(form.body)).toBe('first\nglpat');
  });

  it('gives nothing for lines that are no batch request', () => {
    expect(batchLinesParts('{"messages": [{"role": "user", "content": "train"}]}\nnot json\n{"body": "not an object"}')).toEqual([]);
  });
});

describe('providerRequestParts', () => {
  it('reads a passthrough body whatever its content type', () => {
    expect(texts(providerRequestParts('proxy', '/custom', raw('{"a": {"b": "c"}}'), { a: { b: 'c' } })!)).toEqual(['a', 'b', 'c']);
    expect(texts(providerRequestParts('proxy', '/custom', raw('say hi', 'text/plain'), {})!)).toEqual(['say hi']);
    expect(providerRequestParts('proxy', '/custom', { kind: 'none' }, {})).toEqual([]);
  });

  it('reads the assistants JSON body and an upload of batch lines', () => {
    const json = { role: 'user', content: 'hello' };
    expect(providerRequestParts('assistants', '/threads/{thread_id}/messages', { kind: 'json', value: json, text: JSON.stringify(json) }, json)).toEqual([
      { role: 'user', text: 'hello' },
    ]);
    const upload = raw(line('1', '/v1/chat/completions', { messages: [{ role: 'user', content: 'u' }] }), 'multipart/form-data; boundary=x');
    expect(texts(providerRequestParts('uploadFile', '', upload, { purpose: 'batch' })!)).toEqual(['u']);
  });

  it('leaves the endpoints guardrails/text.ts reads to it', () => {
    expect(providerRequestParts('chatComplete', '', { kind: 'none' }, {})).toBeUndefined();
  });

  it('refuses a body with more text than the hooks check (413), never passing it unchecked', () => {
    const big = { kind: 'raw' as const, bytes: new Uint8Array(MAX_CHECKED_TEXT + 1), contentType: 'application/octet-stream' };
    let err: unknown;
    try {
      providerRequestParts('proxy', '/custom', big, {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GantryError);
    expect((err as GantryError).status).toBe(413);
  });
});
