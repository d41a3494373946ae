/** Path parameters and passthrough paths: encoded into templates, never escaping the provider base. */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';
import { checkPathParams, checkProxyPath, fillPath } from '../../../../layers/core/src/gateway/paths.ts';

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
