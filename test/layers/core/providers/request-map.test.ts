/** The declarative request map: renames and model prefixes, nothing else touched. */
import { describe, expect, it } from 'vitest';
import { applyRequestMap } from '../../../../layers/core/src/providers/request-map.ts';
import { findProvider } from '../../../../layers/core/src/providers/registry.ts';
import type { RequestMap } from '../../../../layers/core/src/providers/types.ts';

const map = (requestMap: RequestMap) => ({ requestMap });

describe('applyRequestMap', () => {
  it('returns the same object when the provider maps nothing', () => {
    const body = { model: 'm', top_n: 2 };
    expect(applyRequestMap({}, 'rerank', body)).toBe(body);
    expect(applyRequestMap(map({ rename: { rerank: { top_n: 'top_k' } } }), 'embed', body)).toBe(body);
  });

  it("renames voyage's rerank top_n to top_k and keeps every other field", () => {
    const voyage = findProvider('voyage')!;
    const body = { model: 'rerank-2.5', query: 'q', documents: ['a', 'b'], top_n: 1, truncation: true, unknown_field: { x: 1 } };
    const out = applyRequestMap(voyage, 'rerank', body);
    expect(out).toEqual({ model: 'rerank-2.5', query: 'q', documents: ['a', 'b'], top_k: 1, truncation: true, unknown_field: { x: 1 } });
    expect(body.top_n).toBe(1); // the client's body is not changed in place
  });

  it('lets a provider-named field the client sent win over the renamed one', () => {
    const out = applyRequestMap(map({ rename: { rerank: { top_n: 'top_k' } } }), 'rerank', { top_n: 1, top_k: 3 });
    expect(out).toEqual({ top_k: 3 });
  });

  it('strips a model prefix on the named endpoint only', () => {
    const p = map({ stripModelPrefix: { rerank: 'cohere.' } });
    expect(applyRequestMap(p, 'rerank', { model: 'cohere.rerank-v3-5:0', query: 'q' })).toEqual({ model: 'rerank-v3-5:0', query: 'q' });
    const body = { model: 'other-model' };
    expect(applyRequestMap(p, 'rerank', body)).toBe(body);
    const chat = { model: 'cohere.command' };
    expect(applyRequestMap(p, 'chatComplete', chat)).toBe(chat);
  });
});
