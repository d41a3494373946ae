/** The OpenAI-compatible base: most providers are this with another base URL. */
import type { EndpointType, ProviderDefinition } from './types.ts';

export const OPENAI_ENDPOINTS: Readonly<Record<EndpointType, string>> = {
  chatComplete: '/chat/completions',
  embed: '/embeddings',
};

export function openAICompatible(
  id: string,
  name: string,
  baseUrl: string,
  overrides: Partial<Omit<ProviderDefinition, 'id' | 'name' | 'baseUrl'>> = {},
): ProviderDefinition {
  return { id, name, baseUrl, auth: { kind: 'bearer' }, endpoints: OPENAI_ENDPOINTS, ...overrides };
}
