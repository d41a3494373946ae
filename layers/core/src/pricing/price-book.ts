/**
 * Effective prices: a workspace's override, else the organisation's custom price, else the catalog,
 * field by field (a custom price that sets only `input` keeps the catalog's output price).
 *
 * An organisation's custom prices are loaded in one Query and cached in-process for the TTL; after
 * the first load a stale entry is served while it refreshes, so a warm gateway never waits on the
 * table. The admin routes drop an organisation's entry at once when they change a price; other
 * instances see the change within the TTL.
 */
import { priceRecord } from '../kernel/usage.ts';
import type { GatewayHook, GatewayRecord } from '../kernel/lifecycle.ts';
import type { Clock } from '../ports/clock.ts';
import { findModel, type CatalogModel, type TokenPrice } from './catalog.ts';
import { costMicrosOf, formatUsd } from './cost.ts';
import type { CustomPriceRecord, CustomPriceRepository } from '../store/custom-prices.ts';

export type PriceSource = 'workspace' | 'organisation' | 'catalog';

export interface EffectivePrice {
  provider: string;
  /** The model id the price was found under (a catalog id, or the custom price's model). */
  model: string;
  price: TokenPrice;
  /** Where each set field came from. */
  sources: Partial<Record<keyof TokenPrice, PriceSource>>;
  catalog?: CatalogModel;
}

interface OrgPrices {
  at: number;
  byKey: Map<string, CustomPriceRecord>;
  loading?: Promise<void>;
}

const FIELDS = [
  ['input', 'input_per_million'],
  ['output', 'output_per_million'],
  ['cachedInput', 'cached_input_per_million'],
] as const;

const recordKey = (workspaceId: string | null, provider: string, model: string) => `${workspaceId ?? '-'}\u0000${provider}\u0000${model}`;

/** Cache statuses served without a provider call: they cost nothing. */
const FREE_CACHE_STATUSES: ReadonlySet<string> = new Set(['HIT', 'SEMANTIC HIT']);

export class PriceBook {
  readonly #repo: CustomPriceRepository;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #orgs = new Map<string, OrgPrices>();

  constructor(repo: CustomPriceRepository, clock: Clock, ttlMs: number) {
    this.#repo = repo;
    this.#clock = clock;
    this.#ttlMs = ttlMs;
  }

  /**
   * Makes the organisation's custom prices available to the synchronous lookups. Waits only the
   * first time (nothing cached yet); a stale entry is refreshed in the background. Never throws:
   * prices that cannot be loaded fall back to the catalog.
   */
  async prefetch(orgId: string): Promise<void> {
    const entry = this.#orgs.get(orgId);
    if (entry && this.#clock.now() - entry.at < this.#ttlMs) return;
    const load = entry?.loading ?? this.#load(orgId);
    if (!entry) await load;
  }

  #load(orgId: string): Promise<void> {
    const entry: OrgPrices = this.#orgs.get(orgId) ?? { at: -Infinity, byKey: new Map() };
    if (this.#orgs.size > 5_000) this.#orgs.clear();
    this.#orgs.set(orgId, entry);
    entry.loading = this.#repo
      .list(orgId)
      .then((records) => {
        entry.byKey = new Map(records.map((r) => [recordKey(r.workspace_id, r.provider, r.model), r]));
      })
      .catch(() => {
        // Keep what we had; try again after the TTL.
      })
      .finally(() => {
        entry.at = this.#clock.now();
        delete entry.loading;
      });
    return entry.loading;
  }

  /** Resolves when a background refresh of the organisation's prices (if any) has finished. */
  settled(orgId: string): Promise<void> {
    return this.#orgs.get(orgId)?.loading ?? Promise.resolve();
  }

  /** Drops cached custom prices (one organisation's, or all) after this process changed one. */
  invalidate(orgId?: string): void {
    if (orgId === undefined) this.#orgs.clear();
    else this.#orgs.delete(orgId);
  }

  /**
   * The effective price from what is cached now (call `prefetch` first to include custom prices).
   * Undefined when neither a custom price nor the catalog knows the model.
   */
  effectivePrice(orgId: string | undefined, workspaceId: string | null | undefined, provider: string, model: string): EffectivePrice | undefined {
    const catalog = findModel(provider, model);
    const custom = orgId === undefined ? undefined : this.#orgs.get(orgId)?.byKey;
    const levels: Array<[PriceSource, CustomPriceRecord | undefined]> = [];
    if (custom && custom.size > 0) {
      const names = catalog && catalog.id !== model ? [model, catalog.id] : [model];
      const find = (ws: string | null) => {
        for (const name of names) {
          const r = custom.get(recordKey(ws, provider, name));
          if (r) return r;
        }
        return undefined;
      };
      if (workspaceId) levels.push(['workspace', find(workspaceId)]);
      levels.push(['organisation', find(null)]);
    }
    const price: TokenPrice = {};
    const sources: EffectivePrice['sources'] = {};
    for (const [field, column] of FIELDS) {
      for (const [source, record] of levels) {
        const v = record?.[column];
        if (typeof v === 'number') {
          price[field] = v;
          sources[field] = source;
          break;
        }
      }
      const fromCatalog = catalog?.price[field];
      if (price[field] === undefined && fromCatalog !== undefined) {
        price[field] = fromCatalog;
        sources[field] = 'catalog';
      }
    }
    if (Object.keys(sources).length === 0) return undefined;
    const customModel = levels.find(([, r]) => r)?.[1]?.model;
    const out: EffectivePrice = { provider, model: catalog?.id ?? customModel ?? model, price, sources };
    if (catalog) out.catalog = catalog;
    return out;
  }

  /** A request's cost in micro-dollars from what is cached now; undefined when it cannot be priced. */
  costMicros(record: GatewayRecord): number | undefined {
    if (record.cacheStatus && FREE_CACHE_STATUSES.has(record.cacheStatus)) return 0;
    const usage = record.usage;
    const provider = record.provider;
    if (!usage || !provider) return undefined;
    const org = record.principal?.organisationId;
    const ws = record.principal?.workspaceId;
    // Never the client's model when override_params replaced it: the provider was not asked for it.
    const sent = record.sentModel ?? (typeof record.request?.model === 'string' ? record.request.model : undefined);
    for (const model of new Set([record.model, sent])) {
      if (!model) continue;
      const effective = this.effectivePrice(org, ws, provider, model);
      if (effective) return costMicrosOf(effective.price, usage);
    }
    return undefined;
  }
}

/**
 * The `x-gw-cost` header value (USD, e.g. `0.000123`) for a finished non-streamed answer, or
 * undefined when the model has no price. Synchronous: reads only cached prices, which the pricing
 * hook's `admit` has loaded by then. Needs `record.provider`, `record.usage`, `record.model` (or
 * `record.request.model`), `record.principal` and `record.cacheStatus` filled in.
 */
export function costFor(record: GatewayRecord, book: PriceBook): string | undefined {
  const micros = book.costMicros(record);
  return micros === undefined ? undefined : formatUsd(micros);
}

/**
 * Prices every gateway request: `admit` loads the organisation's custom prices (only the first time
 * waits), `complete` sets `record.costMicros` from the usage. Registered first, so that the hooks
 * after it (limits, logs, metrics) see the cost.
 */
export function pricingHook(book: PriceBook): GatewayHook {
  return {
    name: 'pricing',
    async admit(record) {
      if (record.principal) await book.prefetch(record.principal.organisationId);
    },
    settle(record) {
      // A non-streamed answer was priced already, for its x-gw-cost header: that figure is kept.
      priceRecord(record, book);
    },
  };
}
