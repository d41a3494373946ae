/** Embedding and rerank services with OpenAI-shaped requests. */
import { openAICompatible, openAIPaths } from './openai-compatible.ts';

export const jina = openAICompatible('jina', 'Jina AI', 'https://api.jina.ai/v1', {
  endpoints: openAIPaths('embed', 'rerank'),
});

export const voyage = openAICompatible('voyage', 'Voyage AI', 'https://api.voyageai.com/v1', {
  endpoints: openAIPaths('embed', 'rerank'),
  // Voyage's rerank names the result count `top_k`.
  requestMap: { rename: { rerank: { top_n: 'top_k' } } },
});
