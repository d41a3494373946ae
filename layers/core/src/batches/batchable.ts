/** The endpoints a batch line may call (OpenAI's batchable endpoints). */
export const BATCHABLE_ENDPOINTS = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/moderations', '/v1/responses'] as const;
