/**
 * The registry as a whole: every provider the gateway reaches, OpenAI-wire and native-format, and
 * the counts the README states (providers reachable through the unified chat and embeddings
 * endpoints). Native providers are registry data whose endpoints must be their modules' own.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { findNativeProvider, NATIVE_PROVIDERS } from '../../../../layers/core/src/providers/native/index.ts';
import { allProviders, findProvider, providerIds, providersServing } from '../../../../layers/core/src/providers/registry.ts';

const README = readFileSync(new URL('../../../../README.md', import.meta.url), 'utf8');

describe('provider registry', () => {
  const chat = providersServing('chatComplete');
  const embed = providersServing('embed');

  it('reaches at least 40 providers through chat and 12 through embeddings', () => {
    expect(chat.length).toBeGreaterThanOrEqual(40);
    expect(embed.length).toBeGreaterThanOrEqual(12);
    for (const id of ['anthropic', 'bedrock', 'google', 'vertex-ai', 'azure-openai', 'azure-ai', 'cohere', 'openai', 'groq']) expect(chat).toContain(id);
    for (const id of ['bedrock', 'google', 'vertex-ai', 'azure-openai', 'azure-ai', 'cohere', 'openai', 'voyage']) expect(embed).toContain(id);
  });

  it('states those counts in the README', () => {
    expect(README).toContain(`${providerIds().length} providers`);
    expect(README).toContain(`${chat.length} through the unified chat endpoint`);
    expect(README).toContain(`${embed.length} through embeddings`);
  });

  it('has unique ids', () => {
    expect(new Set(providerIds()).size).toBe(providerIds().length);
  });

  it('lists every native provider, with the endpoints its module serves', () => {
    const declared = allProviders().filter((p) => p.native);
    expect(declared.map((p) => p.id)).toEqual(NATIVE_PROVIDERS.map((p) => p.id));
    for (const p of declared) {
      const module = findNativeProvider(p.id);
      expect(module?.name, p.id).toBe(p.name);
      expect(Object.keys(p.endpoints).sort(), p.id).toEqual(Object.keys(module?.endpoints ?? {}).sort());
    }
    expect(findProvider('Bedrock')?.native).toBe(true);
    expect(findProvider('openai')?.native).toBeUndefined();
  });
});
