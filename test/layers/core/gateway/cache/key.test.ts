/** Exact-match cache keys: canonical JSON and the partitioning the key carries. */
import { describe, expect, it } from 'vitest';
import { cacheKey, canonicalJson } from '../../../../../layers/core/src/gateway/cache/key.ts';

const body = {
  model: 'gpt-4o-mini',
  temperature: 0,
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
  ],
  response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: {}, b: {} } } } },
};
const base = { workspaceId: 'ws-1', endpoint: 'chat/completions', body };

describe('canonicalJson', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it('drops undefined members as JSON does', () => {
    expect(canonicalJson({ a: undefined, b: [undefined] })).toBe('{"b":[null]}');
  });

  it('escapes strings as JSON', () => {
    expect(canonicalJson({ 'k"': 'line\n"quoted"' })).toBe(JSON.stringify({ 'k"': 'line\n"quoted"' }));
  });
});

describe('cacheKey', () => {
  it('is a hex SHA-256', () => {
    expect(cacheKey(base)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('does not depend on key order, at any depth', () => {
    const reordered = {
      response_format: { json_schema: { schema: { properties: { b: {}, a: {} }, type: 'object' }, name: 'x' }, type: 'json_schema' },
      messages: [
        { content: 'Be brief.', role: 'system' },
        { content: [{ text: 'Hi', type: 'text' }], role: 'user' },
      ],
      temperature: 0,
      model: 'gpt-4o-mini',
    };
    expect(cacheKey({ ...base, body: reordered })).toBe(cacheKey(base));
  });

  it('changes with any field of the request, and with message order', () => {
    expect(cacheKey({ ...base, body: { ...body, temperature: 0.1 } })).not.toBe(cacheKey(base));
    expect(cacheKey({ ...base, body: { ...body, messages: [...body.messages].reverse() } })).not.toBe(cacheKey(base));
    expect(cacheKey({ ...base, body: { ...body, stream: true } })).not.toBe(cacheKey(base));
  });

  it('partitions by workspace and namespace', () => {
    const keys = new Set([
      cacheKey(base),
      cacheKey({ ...base, workspaceId: 'ws-2' }),
      cacheKey({ ...base, namespace: 'team-a' }),
      cacheKey({ ...base, namespace: 'team-b' }),
      cacheKey({ ...base, workspaceId: 'ws-2', namespace: 'team-a' }),
    ]);
    expect(keys.size).toBe(5);
  });

  it('treats an empty namespace as none', () => {
    expect(cacheKey({ ...base, namespace: '' })).toBe(cacheKey(base));
    expect(cacheKey({ ...base, namespace: undefined })).toBe(cacheKey(base));
  });

  it('differs by endpoint and by provider', () => {
    expect(cacheKey({ ...base, endpoint: 'completions' })).not.toBe(cacheKey(base));
    expect(cacheKey({ ...base, provider: 'openai' })).not.toBe(cacheKey(base));
    expect(cacheKey({ ...base, provider: 'openai' })).not.toBe(cacheKey({ ...base, provider: 'anthropic' }));
  });

  it('cannot be forged by moving a value between fields', () => {
    expect(cacheKey({ workspaceId: 'a', namespace: 'b', endpoint: 'e', body: {} })).not.toBe(cacheKey({ workspaceId: 'a#b', endpoint: 'e', body: {} }));
  });
});
