/**
 * The figures analytics are made of, kept the same way for one rollup item, one batch of events
 * and one answer: counts and sums that add, a latency histogram, status codes, retry counts, and
 * the unique-user sketch. Rollup items store them as attributes that DynamoDB's ADD updates
 * atomically (numbers, and number sets for the sketch and the seen-times).
 */
import { bucketOf } from './histogram.ts';
import { isCacheHit, type LogEvent } from './log-event.ts';
import { userBucket } from './sketch.ts';
import { GRANULARITY_MS, type Granularity } from './time.ts';

export const DIMENSIONS = ['all', 'model', 'provider', 'ai_service', 'status_code', 'api_key', 'config', 'prompt'] as const;
export type Dimension = (typeof DIMENSIONS)[number];

/** The value a dimension takes for an event; `-` when the event has none. */
export const NONE = '-';

export function dimensionValue(e: LogEvent, d: Dimension): string {
  switch (d) {
    case 'all':
      return '*';
    case 'model':
      return e.model ?? NONE;
    case 'provider':
      return e.provider ?? NONE;
    case 'ai_service':
      return e.ai_service ?? NONE;
    case 'status_code':
      return String(e.status_code);
    case 'api_key':
      return e.api_key_id ?? NONE;
    case 'config':
      return e.config_id ?? NONE;
    case 'prompt':
      return e.prompt_slug ?? NONE;
  }
}

/** Additive sums; the attribute names are those of the rollup items. */
export const SUMS = ['n', 'err', 'cost', 'savs', 'savm', 'tin', 'tout', 'ttot', 'lat', 'ch', 'chs', 'chm', 'clat', 'fb', 'rsc'] as const;
export type SumName = (typeof SUMS)[number];

/** Families of counters kept per key: retries of rescued requests, status codes, latency buckets. */
export const COUNTERS = { rr: 'rr_', sc: 'sc_', h: 'h_' } as const;
export type CounterName = keyof typeof COUNTERS;

export interface Aggregate {
  sums: Record<SumName, number>;
  counters: Record<CounterName, Map<number, number>>;
  /** Buckets of the unique-user sketch. */
  users: Set<number>;
  /** Offsets (in the item's resolution) at which requests were seen; items only. */
  seen: Set<number>;
  /** First and last request time (ms), when known. */
  first: number | undefined;
  last: number | undefined;
}

export function emptyAggregate(): Aggregate {
  return {
    sums: Object.fromEntries(SUMS.map((s) => [s, 0])) as Record<SumName, number>,
    counters: { rr: new Map(), sc: new Map(), h: new Map() },
    users: new Set(),
    seen: new Set(),
    first: undefined,
    last: undefined,
  };
}

const bump = (m: Map<number, number>, k: number, by: number) => m.set(k, (m.get(k) ?? 0) + by);

/** Adds one event; `bucket` (start ms and granularity) records when, at the item's resolution. */
export function addEvent(agg: Aggregate, e: LogEvent, bucket?: { start: number; gran: Granularity }): void {
  const s = agg.sums;
  const success = e.is_success;
  s.n += 1;
  if (e.status_code >= 400 || e.status_code < 100) s.err += 1;
  s.cost += e.cost_micros;
  s.tin += e.prompt_tokens;
  s.tout += e.completion_tokens;
  s.ttot += e.total_tokens;
  s.lat += e.total_ms;
  if (isCacheHit(e.cache_status)) {
    s.ch += 1;
    s.clat += e.total_ms;
    if (e.cache_status === 'SEMANTIC HIT') {
      s.chm += 1;
      s.savm += e.cache_savings_micros;
    } else {
      s.chs += 1;
      s.savs += e.cache_savings_micros;
    }
  }
  if (success && (e.retries > 0 || e.fallback)) {
    s.rsc += 1;
    if (e.retries > 0) bump(agg.counters.rr, e.retries, 1);
    if (e.fallback) s.fb += 1;
  }
  bump(agg.counters.sc, e.status_code, 1);
  bump(agg.counters.h, bucketOf(e.total_ms), 1);
  if (e.user) agg.users.add(userBucket(e.user));
  if (bucket) agg.seen.add(Math.floor((e.started_ms - bucket.start) / SEEN_RESOLUTION_MS[bucket.gran]));
  agg.first = agg.first === undefined ? e.started_ms : Math.min(agg.first, e.started_ms);
  agg.last = agg.last === undefined ? e.started_ms : Math.max(agg.last, e.started_ms);
}

/** Adds `b` into `a`. */
export function mergeInto(a: Aggregate, b: Aggregate): void {
  for (const k of SUMS) a.sums[k] += b.sums[k];
  for (const c of Object.keys(COUNTERS) as CounterName[]) for (const [k, v] of b.counters[c]) bump(a.counters[c], k, v);
  for (const u of b.users) a.users.add(u);
  for (const t of b.seen) a.seen.add(t);
  if (b.first !== undefined) a.first = a.first === undefined ? b.first : Math.min(a.first, b.first);
  if (b.last !== undefined) a.last = a.last === undefined ? b.last : Math.max(a.last, b.last);
}

/** How precisely a rollup item remembers when it saw requests: seconds, minutes, hours. */
export const SEEN_RESOLUTION_MS: Readonly<Record<Granularity, number>> = { m: 1_000, h: 60_000, d: 3_600_000 };

/** The dimensions a rollup item is keyed by (`all` is their sum). */
export type GroupDimension = Exclude<Dimension, 'all'>;
export const GROUP_DIMENSIONS = DIMENSIONS.filter((d): d is GroupDimension => d !== 'all');

/**
 * Where one rollup lives: workspace, granularity, bucket start and the value of every dimension;
 * or, with `total`, the workspace's total of the bucket (its values are then all `*`); or, with
 * `dim`, the item of one dimension's value (`values[dim]`, the others `*`).
 */
export interface RollupKey {
  ws: string;
  gran: Granularity;
  bucket: number;
  values: Record<GroupDimension, string>;
  total?: true | undefined;
  dim?: GroupDimension | undefined;
  /**
   * A dimension item's place, once decided (observability/rollup-admission.ts): the value's own
   * item (`admitted`) or the dimension's remainder (`other`). Neither: RollupStore.add decides.
   */
  admitted?: true | undefined;
  other?: true | undefined;
  /** With `other`'s decision, the value's own series item: what a filter on it reads in this bucket. */
  series?: true | undefined;
}

/** An aggregate as JSON (maps and sets as arrays), for the queue. */
export interface SerializedAggregate {
  sums: Record<SumName, number>;
  counters: Record<CounterName, [number, number][]>;
  users: number[];
  seen: number[];
}

/** A rollup update that failed in its batch, sent back to the queue to be applied on its own. */
export interface RollupDeltaMessage {
  kind: 'rollup';
  key: RollupKey;
  delta: SerializedAggregate;
}

export function serialize(a: Aggregate): SerializedAggregate {
  return {
    sums: { ...a.sums },
    counters: { rr: [...a.counters.rr], sc: [...a.counters.sc], h: [...a.counters.h] },
    users: [...a.users],
    seen: [...a.seen],
  };
}

export function deserialize(s: SerializedAggregate): Aggregate {
  const a = emptyAggregate();
  for (const k of SUMS) a.sums[k] = Number(s.sums[k] ?? 0);
  for (const c of Object.keys(COUNTERS) as CounterName[]) a.counters[c] = new Map(s.counters[c] ?? []);
  a.users = new Set(s.users);
  a.seen = new Set(s.seen);
  return a;
}

/** Reads a rollup item's figures back; first and last seen come from its seen-times. */
export function fromItem(item: Record<string, unknown>): Aggregate {
  const a = emptyAggregate();
  for (const k of SUMS) a.sums[k] = Number(item[k] ?? 0);
  for (const [name, value] of Object.entries(item)) {
    for (const c of Object.keys(COUNTERS) as CounterName[]) {
      const prefix = COUNTERS[c];
      if (name.startsWith(prefix)) a.counters[c].set(Number(name.slice(prefix.length)), Number(value));
    }
  }
  a.users = toNumberSet(item.u);
  a.seen = toNumberSet(item.t);
  const gran = item.g as Granularity | undefined;
  const bucket = Number(item.b);
  if (gran && GRANULARITY_MS[gran] && a.seen.size > 0) {
    const res = SEEN_RESOLUTION_MS[gran];
    const offsets = [...a.seen];
    a.first = bucket + Math.min(...offsets) * res;
    a.last = bucket + Math.max(...offsets) * res;
  }
  a.seen = new Set();
  return a;
}

function toNumberSet(v: unknown): Set<number> {
  if (v instanceof Set) return new Set([...v].map(Number));
  if (Array.isArray(v)) return new Set(v.map(Number));
  return new Set();
}
