/** The built-in catalog: size, shape, and how model names find their entry. */
import { describe, expect, it } from 'vitest';
import { catalogModels, catalogProviders, findModel } from '../../../../layers/core/src/pricing/catalog.ts';
import { findProvider } from '../../../../layers/core/src/providers/registry.ts';

describe('catalog', () => {
  it('holds at least 250 models with published prices', () => {
    const priced = catalogModels().filter((m) => m.price.input !== undefined && m.price.output !== undefined);
    expect(priced.length).toBeGreaterThanOrEqual(250);
  });

  it('belongs to registered providers only, with unique ids per provider and sane prices', () => {
    for (const provider of catalogProviders()) {
      expect(findProvider(provider), provider).toBeDefined();
      const ids = catalogModels(provider).map((m) => m.id);
      expect(new Set(ids).size, provider).toBe(ids.length);
    }
    for (const m of catalogModels()) {
      for (const v of Object.values(m.price)) expect(v).toBeGreaterThanOrEqual(0);
      if (m.price.cachedInput !== undefined && m.price.input !== undefined) expect(m.price.cachedInput).toBeLessThanOrEqual(m.price.input);
      expect(m.types.length).toBeGreaterThan(0);
    }
  });

  it('finds exact ids, case-insensitively', () => {
    expect(findModel('openai', 'gpt-4o')?.price).toEqual({ input: 2.5, output: 10, cachedInput: 1.25 });
    expect(findModel('zhipu', 'GLM-4.7')?.id).toBe('glm-4.7');
    expect(findModel('openai', 'text-embedding-3-small')?.types).toEqual(['embed']);
  });

  it('prefers a dated id the catalog has, and falls back to the base id only when it lacks it', () => {
    expect(findModel('openai', 'gpt-4o-2024-08-06')?.id).toBe('gpt-4o');
    expect(findModel('mistral-ai', 'mistral-large-2512')?.id).toBe('mistral-large-2512');
    expect(findModel('openai', 'gpt-4.1-mini-2025-04-14')?.id).toBe('gpt-4.1-mini');
  });

  it('removes a provider or org prefix, and adds or removes the provider API prefix', () => {
    expect(findModel('openai', 'openai/gpt-4o-mini')?.id).toBe('gpt-4o-mini');
    expect(findModel('fireworks-ai', 'glm-4p7')?.id).toBe('accounts/fireworks/models/glm-4p7');
    expect(findModel('fireworks-ai', 'accounts/fireworks/models/glm-4p7')?.price.output).toBe(2.2);
  });

  it('answers undefined for unknown models and providers', () => {
    expect(findModel('openai', 'no-such-model')).toBeUndefined();
    expect(findModel('nope', 'gpt-4o')).toBeUndefined();
    expect(catalogModels('nope')).toEqual([]);
  });
});
