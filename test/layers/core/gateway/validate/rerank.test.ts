/** The rerank answer as docs/design/spec.md#answers-gantry-shapes shows it, whatever order the provider used. */
import { describe, expect, it } from 'vitest';
import { sortRerankAnswer } from '../../../../../layers/core/src/gateway/validate/rerank.ts';

describe('sortRerankAnswer', () => {
  it('sorts results by relevance descending, stable among equal scores, and names the provider', () => {
    const answer = {
      id: 'r1',
      model: 'rerank-v3.5',
      results: [
        { index: 0, relevance_score: 0.1 },
        { index: 1, relevance_score: 0.9 },
        { index: 2, relevance_score: 0.5 },
        { index: 3, relevance_score: 0.5 },
      ],
      usage: { search_units: 1 },
    };
    const out = sortRerankAnswer(answer, 'jina');
    expect((out.results as Array<{ index: number }>).map((r) => r.index)).toEqual([1, 2, 3, 0]);
    expect(out).toMatchObject({ object: 'list', provider: 'jina', id: 'r1', model: 'rerank-v3.5', usage: { search_units: 1 } });
    // The provider's own values stay.
    expect(sortRerankAnswer({ object: 'rerank', provider: 'cohere', results: [] }, 'x')).toMatchObject({ object: 'rerank', provider: 'cohere' });
  });

  it('leaves an answer without results alone', () => {
    expect(sortRerankAnswer({ data: [1] }, undefined)).toEqual({ object: 'list', data: [1] });
  });
});
