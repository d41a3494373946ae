/**
 * Path parameters and passthrough paths: encoded into templates, never escaping the provider base;
 * and no spelling of a unified route's path left to the passthrough.
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';
import { checkPathParams, checkProxyPath, fillPath, lenientSegments, pathOwner } from '../../../../layers/core/src/gateway/paths.ts';

const refusal = (fn: () => unknown): ValidationError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
};

describe('checkPathParams', () => {
  it('accepts ids, including ones needing encoding', () => {
    expect(checkPathParams(['file_id'], { file_id: 'file-abc_123' })).toEqual({ file_id: 'file-abc_123' });
    expect(checkPathParams(['a', 'b'], { a: 'x y?z#', b: 'a..b' })).toEqual({ a: 'x y?z#', b: 'a..b' });
  });

  it.each([['a/b'], ['..'], ['.'], [''], ['a\\b'], ['a\u0000b'], ['x'.repeat(513)]])('refuses %j, naming the parameter', (value) => {
    const err = refusal(() => checkPathParams(['batch_id'], { batch_id: value }));
    expect(err.status).toBe(400);
    expect(err.param).toBe('batch_id');
  });

  it('refuses a missing parameter', () => {
    expect(refusal(() => checkPathParams(['job_id'], {})).param).toBe('job_id');
  });
});

describe('fillPath', () => {
  it('fills every parameter URL-encoded', () => {
    expect(fillPath('/threads/{thread_id}/runs/{run_id}', { thread_id: 'thread_1', run_id: 'r 1?x=#' })).toBe('/threads/thread_1/runs/r%201%3Fx%3D%23');
    expect(fillPath('/files', {})).toBe('/files');
  });

  it('throws on a template parameter the route does not have (a programming error)', () => {
    expect(() => fillPath('/files/{file_id}', {})).toThrow('needs file_id');
  });
});

describe('checkProxyPath', () => {
  it('keeps a path as the client encoded it', () => {
    expect(checkProxyPath('/vector_stores/vs_1/files?x')).toBe('/vector_stores/vs_1/files?x');
    expect(checkProxyPath('/models/org%2Fname')).toBe('/models/org%2Fname');
  });

  it.each([['/a/%2e%2e/b'], ['/a%2F..%2Fb'], ['/a/..%5Cb'], ['/a/%2E/b'], ['/a/%00'], ['/a/%zz']])('refuses %s', (path) => {
    expect(refusal(() => checkProxyPath(path)).param).toBe('path');
  });
});

describe('lenientSegments', () => {
  it.each([
    ['/chat/completions', ['chat', 'completions']],
    ['//Chat//COMPLETIONS/', ['chat', 'completions']],
    ['/chat/%63ompletions', ['chat', 'completions']],
    ['/chat/%2563ompletions', ['chat', 'completions']],
    ['/chat%2Fcompletions', ['chat', 'completions']],
    ['/chat%5Ccompletions', ['chat', 'completions']],
    ['/chat/completions;jsessionid=1', ['chat', 'completions']],
    ['/chat/%20completions%20', ['chat', 'completions']],
    ['/\uff43hat/completions', ['chat', 'completions']],
    ['/chat\uff0fcompletions', ['chat', 'completions']],
    ['/\u017fomething', ['something']],
    ['/a/%zz/%E0%A4%A', ['a', '%zz', '%e0%a4%a']],
  ])('%s reads as %j', (path, segments) => {
    expect(lenientSegments(path)).toEqual(segments);
  });
});

describe('pathOwner', () => {
  const ownerOf = pathOwner([
    { method: 'POST', path: '/chat/completions' },
    { method: 'POST', path: '/threads/runs' },
    { method: 'POST', path: '/threads/{thread_id}/messages' },
    { method: 'GET', path: '/files/{file_id}/content' },
    { method: 'GET', path: '/models/{model+}' },
  ]);

  it.each([
    ['POST', '/v1/chat/completions/', '/v1/chat/completions'],
    ['POST', '/v1//chat/completions', '/v1/chat/completions'],
    ['POST', '/v1/Chat/Completions', '/v1/chat/completions'],
    ['POST', '/v1/chat%2Fcompletions', '/v1/chat/completions'],
    ['POST', '/v1/chat/%2563ompletions', '/v1/chat/completions'],
    ['POST', '/v1/Threads/RUNS', '/v1/threads/runs'],
    ['POST', '/v1/threads/Thread_1/MESSAGES/', '/v1/threads/Thread_1/messages'],
    ['POST', '/v1/threads/a%20b/messages/', '/v1/threads/a%20b/messages'],
    ['GET', '/v1/files/file-1/Content', '/v1/files/file-1/content'],
    ['GET', '/v1//models/org/name', '/v1/models/org/name'],
  ])('%s %s is owned by %s', (method, path, canonical) => {
    expect(ownerOf(method, path)).toBe(canonical);
  });

  it.each([
    // Another method: OpenAI's own GET /v1/chat/completions (stored completions) is the passthrough's.
    ['GET', '/v1/chat/completions/'],
    // Gemini-style paths are no route of POST.
    ['POST', '/v1/models/gemini-2.0-flash:generateContent'],
    // More or fewer segments, or other words.
    ['POST', '/v1/chat/completions/chatcmpl-1'],
    ['POST', '/v1/chat'],
    ['POST', '/v1/vector_stores/vs_1/search'],
    ['POST', '/v1/threads//messages'],
    ['GET', '/v1/models'],
    ['POST', '/v2/chat/completions'],
  ])('%s %s is left to the passthrough', (method, path) => {
    expect(ownerOf(method, path)).toBeUndefined();
  });
});
