/**
 * Providers reached only through the passthrough (`/v1/<path>` to `{base}/<path>`): their APIs
 * have no OpenAI counterpart (Stability's image forms, Replicate's predictions, Hugging Face's
 * task endpoints), so the gateway adds their base URL and key and sends the rest as it came. All
 * take the key as `Authorization: Bearer`; a unified endpoint answers 400 naming the provider.
 */
import type { ProviderDefinition } from './types.ts';

const passthroughOnly = (id: string, name: string, baseUrl: string): ProviderDefinition => ({ id, name, baseUrl, auth: { kind: 'bearer' }, endpoints: {} });

/** v1 JSON (`/v1/generation/...`) and v2 multipart (`/v2beta/stable-image/...`): the client's path names the version. */
export const stabilityAi = passthroughOnly('stability-ai', 'Stability AI', 'https://api.stability.ai');

export const replicate = passthroughOnly('replicate', 'Replicate', 'https://api.replicate.com/v1');

/** Hugging Face's own serverless inference (task endpoints such as `/models/{model}`), behind the router. */
export const hfInference = passthroughOnly('hf-inference', 'Hugging Face Inference (hf-inference)', 'https://router.huggingface.co/hf-inference');
