/** Every provider the gateway knows, by id. Adding a provider is one line here plus its module. */
import { openAICompatible } from './openai-compatible.ts';
import type { ProviderDefinition } from './types.ts';

const PROVIDERS: readonly ProviderDefinition[] = [
  openAICompatible('openai', 'OpenAI', 'https://api.openai.com/v1', {
    optionHeaders: { openai_organization: 'OpenAI-Organization', openai_project: 'OpenAI-Project' },
  }),
];

const BY_ID: ReadonlyMap<string, ProviderDefinition> = new Map(PROVIDERS.map((p) => [p.id, p]));

export function findProvider(id: string): ProviderDefinition | undefined {
  return BY_ID.get(id.toLowerCase());
}

export const providerIds = (): string[] => PROVIDERS.map((p) => p.id);
