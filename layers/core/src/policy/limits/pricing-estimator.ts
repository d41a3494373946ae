/**
 * Cost estimates for budget reservations from the pricing catalogue and the organisation's custom
 * prices. Before the routing chose a target the provider is unknown, so the estimate takes the
 * highest price any provider lists for the model; a model nobody prices falls back to the
 * conservative default.
 */
import type { PriceBook } from '../../pricing/price-book.ts';
import { catalogProviders } from '../../pricing/catalog.ts';
import { DEFAULT_COST_ESTIMATOR, type CostEstimator, type CostInput } from './estimate.ts';

interface PerToken {
  input: number;
  output: number;
  at: number;
}

const MAX_ENTRIES = 5_000;

export function priceBookEstimator(book: PriceBook, now: () => number, ttlMs: number, fallback: CostEstimator = DEFAULT_COST_ESTIMATOR): CostEstimator {
  const cache = new Map<string, PerToken | null>();
  const cachedAt = new Map<string, number>();

  const perToken = (input: CostInput & { model: string }): PerToken | undefined => {
    const key = `${input.organisationId ?? ''}\u0000${input.workspaceId ?? ''}\u0000${input.provider ?? ''}\u0000${input.model}`;
    const t = now();
    const at = cachedAt.get(key);
    if (at !== undefined && t - at < ttlMs) return cache.get(key) ?? undefined;
    let inputPrice = -1;
    let outputPrice = -1;
    for (const provider of input.provider ? [input.provider] : catalogProviders()) {
      const price = book.effectivePrice(input.organisationId, input.workspaceId, provider, input.model)?.price;
      if (!price || (price.input === undefined && price.output === undefined)) continue;
      inputPrice = Math.max(inputPrice, price.input ?? 0);
      outputPrice = Math.max(outputPrice, price.output ?? 0);
    }
    const found: PerToken | null = inputPrice < 0 ? null : { input: inputPrice, output: outputPrice, at: t };
    if (cache.size >= MAX_ENTRIES) {
      cache.clear();
      cachedAt.clear();
    }
    cache.set(key, found);
    cachedAt.set(key, t);
    return found ?? undefined;
  };

  return {
    micros(input) {
      const model = input.model;
      const price = model ? perToken({ ...input, model }) : undefined;
      // Prices in USD per million tokens are micro-dollars per token.
      if (!price) return fallback.micros(input);
      return Math.ceil(input.promptTokens * price.input + input.completionTokens * price.output);
    },
  };
}
