/** Effective prices over DynamoDB Local: workspace > organisation > catalog, cached with a TTL. */
import { beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import type { GatewayRecord } from '../../../../layers/core/src/kernel/lifecycle.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { CustomPriceRepository, type CustomPriceRecord } from '../../../../layers/core/src/store/custom-prices.ts';
import { costFor, PriceBook, pricingHook } from '../../../../layers/core/src/pricing/price-book.ts';
import type { Principal } from '../../../../layers/core/src/kernel/principal.ts';
import { createTestDeps } from '../../../support/deps.ts';

const ORG = 'org-1';
const WS = 'ws-1';

const price = (workspace_id: string | null, model: string, p: Partial<CustomPriceRecord>): CustomPriceRecord => ({
  organisation_id: ORG,
  workspace_id,
  provider: 'openai',
  model,
  input_per_million: null,
  output_per_million: null,
  cached_input_per_million: null,
  created_at: '2026-01-01T00:00:00.000Z',
  last_updated_at: '2026-01-01T00:00:00.000Z',
  last_updated_by: null,
  ...p,
});

const principal = { organisationId: ORG, workspaceId: WS } as Principal;

const record = (patch: Partial<GatewayRecord>): GatewayRecord => ({
  id: 'r',
  traceId: 't',
  endpoint: 'chatComplete',
  method: 'POST',
  path: '/v1/chat/completions',
  startedAt: 0,
  metadata: {},
  stream: false,
  principal,
  provider: 'openai',
  model: 'gpt-4o-2024-08-06',
  usage: { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100 },
  ...patch,
});

describe('PriceBook', () => {
  let deps: CoreDeps;
  let repo: CustomPriceRepository;
  const clock = new ManualClock();

  beforeAll(async () => {
    deps = await createTestDeps({}, { clock });
    repo = new CustomPriceRepository(deps.repos.table);
  });

  it('uses the catalog when nothing is custom', async () => {
    const book = new PriceBook(repo, clock, 10_000);
    await book.prefetch(ORG);
    const p = book.effectivePrice(ORG, WS, 'openai', 'gpt-4o-2024-08-06');
    expect(p).toMatchObject({ model: 'gpt-4o', price: { input: 2.5, output: 10, cachedInput: 1.25 }, sources: { input: 'catalog', output: 'catalog' } });
    expect(book.costMicros(record({}))).toBe(1000 * 2.5 + 100 * 10);
    expect(costFor(record({}), book)).toBe('0.003500');
  });

  it('takes the workspace override over the organisation price over the catalog, field by field', async () => {
    await repo.put(price(null, 'gpt-4o', { input_per_million: 3, output_per_million: 12 }));
    await repo.put(price(WS, 'gpt-4o', { output_per_million: 20 }));
    await repo.put(price('ws-other', 'gpt-4o', { input_per_million: 99 }));
    const book = new PriceBook(repo, clock, 10_000);
    await book.prefetch(ORG);
    const p = book.effectivePrice(ORG, WS, 'openai', 'gpt-4o-2024-08-06')!;
    expect(p.price).toEqual({ input: 3, output: 20, cachedInput: 1.25 });
    expect(p.sources).toEqual({ input: 'organisation', output: 'workspace', cachedInput: 'catalog' });
    expect(book.effectivePrice(ORG, null, 'openai', 'gpt-4o')!.price).toEqual({ input: 3, output: 12, cachedInput: 1.25 });
    expect(book.costMicros(record({}))).toBe(1000 * 3 + 100 * 20);
    // Other organisations see the catalog.
    expect(book.effectivePrice('org-2', null, 'openai', 'gpt-4o')!.price.input).toBe(2.5);
  });

  it('prices a model only a custom price knows', async () => {
    await repo.put(price(null, 'my-finetune', { input_per_million: 1, output_per_million: 2 }));
    const book = new PriceBook(repo, clock, 10_000);
    await book.prefetch(ORG);
    expect(book.effectivePrice(ORG, null, 'openai', 'my-finetune')).toMatchObject({ model: 'my-finetune', price: { input: 1, output: 2 } });
    expect(book.effectivePrice(ORG, null, 'openai', 'unknown-model')).toBeUndefined();
  });

  it('serves cached prices for the TTL, refreshes after it, and drops them on invalidate', async () => {
    const book = new PriceBook(repo, clock, 10_000);
    await book.prefetch(ORG);
    await repo.put(price(null, 'gpt-4o-mini', { input_per_million: 7 }));
    await book.prefetch(ORG);
    expect(book.effectivePrice(ORG, null, 'openai', 'gpt-4o-mini')!.price.input).toBe(0.15);
    clock.advance(10_000);
    await book.prefetch(ORG); // stale: refreshed in the background, the old prices served meanwhile
    expect(book.effectivePrice(ORG, null, 'openai', 'gpt-4o-mini')!.price.input).toBe(0.15);
    await book.settled(ORG);
    expect(book.effectivePrice(ORG, null, 'openai', 'gpt-4o-mini')!.price.input).toBe(7);
    await repo.delete(ORG, null, 'openai', 'gpt-4o-mini');
    book.invalidate(ORG);
    await book.prefetch(ORG);
    expect(book.effectivePrice(ORG, null, 'openai', 'gpt-4o-mini')!.price.input).toBe(0.15);
  });

  it('charges nothing for cache hits and nothing it cannot price', async () => {
    const book = new PriceBook(repo, clock, 10_000);
    expect(book.costMicros(record({ cacheStatus: 'HIT' }))).toBe(0);
    expect(book.costMicros(record({ cacheStatus: 'SEMANTIC HIT' }))).toBe(0);
    expect(book.costMicros(record({ cacheStatus: 'MISS' }))).toBeGreaterThan(0);
    expect(book.costMicros(record({ usage: undefined }))).toBeUndefined();
    expect(book.costMicros(record({ model: 'unknown', request: { model: 'gpt-4o-mini' } }))).toBe(Math.round(1000 * 0.15 + 100 * 0.6));
  });

  it('the hook loads prices on admit and sets record.costMicros when it settles the record', async () => {
    const book = new PriceBook(repo, clock, 10_000);
    const hook = pricingHook(book);
    const r = record({ provider: 'groq', model: 'llama-3.3-70b-versatile' });
    await hook.admit?.(r);
    hook.settle?.(r);
    expect(r.costMicros).toBe(Math.round(1000 * 0.59 + 100 * 0.79));
  });

  it('is a gateway hook of the service that settles the record (so every complete reads the cost)', () => {
    expect(deps.gatewayHooks.find((h) => h.name === 'pricing')?.settle).toBeTypeOf('function');
  });
});
