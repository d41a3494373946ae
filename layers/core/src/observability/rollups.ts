/**
 * Rollup items: one per workspace, granularity (minute, hour, day), time bucket and combination of
 * dimension values (model, provider, status code, API key ...). Keys (store/rollup-items.ts): pk
 * `RC#<ws>#<gran>`, sk `<bucket>#<combination hash>`, so a time range is one Query and any
 * dimension is grouped from the same rows. A request processed alone costs three UpdateItem
 * calls (one per granularity) instead of one per dimension and granularity; a batch one per
 * distinct item. The ingest worker adds to them with ADD, which is atomic.
 *
 * Beside them, for the reads that would otherwise sum every combination: the workspace's total
 * per bucket (unfiltered charts), and per dimension one item per value with a bounded number of
 * values per bucket and a remainder (grouped and filtered charts; rollup-admission.ts).
 */
import { createHash } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  dimensionPartition,
  OTHER_ID,
  ROLLUP_TYPE,
  seriesPartition,
  RollupItems,
  rollupPartition,
  rollupSort,
  totalsPartition,
  type MarkerKind,
  type RollupChange,
  type RollupItemKey,
} from '../store/rollup-items.ts';
import {
  addEvent,
  COUNTERS,
  dimensionValue,
  emptyAggregate,
  fromItem,
  GROUP_DIMENSIONS,
  mergeInto,
  SUMS,
  type Aggregate,
  type CounterName,
  type Dimension,
  type GroupDimension,
  type RollupKey,
} from './aggregate.ts';
import type { LogEvent } from './log-event.ts';
import { admitAll, Admissions, undecided, valueId, type PendingRollup } from './rollup-admission.ts';
import { bucketKey, ceilTo, DAY_MS, floorTo, GRANULARITY_MS, MINUTE_MS, MINUTE_ROLLUP_DAYS, type Granularity, type Segment } from './time.ts';

const GRANULARITIES: readonly Granularity[] = ['m', 'h', 'd'];
/** Item attributes holding the dimension values (`d_model` ...): beside, never among, the figures. */
const VALUE_PREFIX = 'd_';

/** Short and fixed-length whatever the values (model names and slugs come from callers). */
const combinationId = (values: Record<GroupDimension, string>): string =>
  createHash('sha256')
    .update(JSON.stringify(GROUP_DIMENSIONS.map((d) => values[d])))
    .digest('base64url')
    .slice(0, 22);

export const rollupPk = (ws: string, gran: Granularity): string => rollupPartition(ws, gran);
export const rollupSk = (bucket: number, values: Record<GroupDimension, string>): string => rollupSort(bucketKey(bucket), combinationId(values));
const dimensionId = (k: RollupKey & { dim: GroupDimension }): string => (k.other ? OTHER_ID : valueId(k.values[k.dim]));
const itemKey = (k: RollupKey): RollupItemKey => ({
  ws: k.ws,
  gran: k.gran,
  bucket: bucketKey(k.bucket),
  combination: k.total || k.dim ? undefined : combinationId(k.values),
  dimension: k.dim ? { dim: k.dim, id: dimensionId({ ...k, dim: k.dim }), series: k.series } : undefined,
});
export function keyString(k: RollupKey): string {
  if (k.total) return `${totalsPartition(k.ws, k.gran)}|${bucketKey(k.bucket)}`;
  if (k.dim && k.series) return `${seriesPartition(k.ws, k.gran, k.dim, dimensionId({ ...k, dim: k.dim }))}|${bucketKey(k.bucket)}`;
  if (k.dim) return `${dimensionPartition(k.ws, k.gran, k.dim)}|${rollupSort(bucketKey(k.bucket), dimensionId({ ...k, dim: k.dim }))}`;
  return `${rollupPk(k.ws, k.gran)}|${rollupSk(k.bucket, k.values)}`;
}

/** The value a dimension's remainder shows in rows (no event has it: values come from events' strings, never with a NUL). */
export const OTHER = '\u0000other';

const ALL_VALUES = Object.fromEntries(GROUP_DIMENSIONS.map((d) => [d, '*'])) as Record<GroupDimension, string>;
/** A dimension item's values: its own, and `*` for the others. */
const onlyValue = (dim: GroupDimension, value: string): Record<GroupDimension, string> => ({ ...ALL_VALUES, [dim]: value });

/**
 * How long after a workspace's totals were first written its buckets may still miss events: the
 * ingest workers of the earlier release that run on during a deployment, and updates they sent
 * back to the queue. Buckets that start earlier are read from the combinations.
 */
export const TOTALS_SETTLE_MS = 15 * MINUTE_MS;
/** How long "no totals yet" is believed before the marker is read again. */
const UNMARKED_RECHECK_MS = 60_000;

/** Workspace of an event's rollups and logs; `-` for requests refused before the key was known. */
export const scopeOf = (e: Pick<LogEvent, 'workspace_id'>): string => e.workspace_id ?? '-';

export type { PendingRollup };

/** Pre-aggregates a batch: one pending update per distinct rollup item, whatever the batch size. */
export function rollupsOf(events: readonly { messageId: string; event: LogEvent }[]): Map<string, PendingRollup> {
  const combinations = new Map<string, PendingRollup>();
  for (const { messageId, event } of events) {
    const values = Object.fromEntries(GROUP_DIMENSIONS.map((d) => [d, dimensionValue(event, d)])) as Record<GroupDimension, string>;
    for (const gran of GRANULARITIES) {
      const key: RollupKey = { ws: scopeOf(event), gran, bucket: floorTo(event.started_ms, GRANULARITY_MS[gran]), values };
      const p = pendingFor(combinations, key);
      addEvent(p.agg, event, { start: key.bucket, gran });
      p.messageIds.add(messageId);
    }
  }
  // Beside each combination, the workspace's total of the bucket and each dimension's value
  // (admitted, or the remainder: decided before writing), summed from the combinations: a busy
  // batch of few combinations adds each event once, not once per item.
  const out = new Map(combinations);
  for (const c of combinations.values()) {
    const { ws, gran, bucket, values } = c.key;
    const derived: RollupKey[] = [
      { ws, gran, bucket, values: ALL_VALUES, total: true },
      ...GROUP_DIMENSIONS.map((dim): RollupKey => ({ ws, gran, bucket, values: onlyValue(dim, values[dim]), dim })),
    ];
    for (const key of derived) {
      const p = pendingFor(out, key);
      mergeInto(p.agg, c.agg);
      for (const m of c.messageIds) p.messageIds.add(m);
    }
  }
  return out;
}

/** The pending update of a key in a batch, created empty on first use. */
function pendingFor(pending: Map<string, PendingRollup>, key: RollupKey): PendingRollup {
  const id = keyString(key);
  let p = pending.get(id);
  if (!p) {
    p = { key, agg: emptyAggregate(), messageIds: new Set() };
    pending.set(id, p);
  }
  return p;
}

/** Rollup items a caller may still read, shared by its queries. */
export interface ReadBudget {
  left: number;
}

export interface RollupRead {
  budget?: ReadBudget | undefined;
  /** Only these figures (item attributes) beside the request count are wanted (`[]`: the count only); the rest of each item is not read. Undefined: all of them. */
  figures?: readonly string[] | undefined;
  /**
   * Only these values of the dimension are wanted (a filter): buckets where one of them may be in
   * the remainder are read from the combinations instead.
   */
  only?: ReadonlySet<string> | undefined;
}

/** A query would read past its budget (the answer is then not worth its cost). */
export class ReadBudgetSpent extends Error {
  override name = 'ReadBudgetSpent';
  constructor() {
    super('rollup read budget spent');
  }
}

export interface RollupRow {
  ws: string;
  gran: Granularity;
  value: string;
  bucket: number;
  agg: Aggregate;
}

/** Where a read finds its items: every combination, the workspace's totals, one dimension's values, or one value's series. */
type ItemSource = 'combinations' | 'totals' | GroupDimension | { dim: GroupDimension; id: string };

export class RollupStore {
  readonly #table: RollupItems;
  readonly #metricsRetentionDays: number;
  readonly #now: () => number;
  readonly #admissions: Admissions;
  /** Workspaces (per marker) whose marker this process has written, or is writing (concurrent adds share the write). */
  readonly #marked = new Map<string, Promise<unknown>>();
  /** Since when each workspace's totals (dimension items) are written, as last read (undefined: not yet, read at `at`). */
  readonly #markedFrom = new Map<string, { from: number | undefined; at: number }>();

  constructor(doc: DynamoDBDocumentClient, tableName: string, metricsRetentionDays: number, now: () => number = Date.now) {
    this.#table = new RollupItems(doc, tableName);
    this.#metricsRetentionDays = metricsRetentionDays;
    this.#now = now;
    this.#admissions = new Admissions(this.#table, (b) => this.ttlOf({ ...b, values: ALL_VALUES }));
  }

  /** Unix seconds after which DynamoDB may delete the item: minutes go early, hours and days with the retention. */
  ttlOf(key: RollupKey): number {
    const days = key.gran === 'm' ? MINUTE_ROLLUP_DAYS + 1 : this.#metricsRetentionDays + 1;
    return Math.floor((key.bucket + GRANULARITY_MS[key.gran] + days * DAY_MS) / 1000);
  }

  /**
   * What one aggregate writes to its item: attributes set to the key's values, and amounts added to
   * what the item holds (zero amounts and empty sets (of user and trace hashes) are left out, as DynamoDB's ADD would keep nothing).
   */
  #change(key: RollupKey, agg: Aggregate): RollupChange {
    const set: Record<string, unknown> = { _type: ROLLUP_TYPE, b: key.bucket, g: key.gran, ws: key.ws };
    if (key.dim) set[VALUE_PREFIX + key.dim] = key.other ? OTHER : key.values[key.dim];
    else if (!key.total) for (const d of GROUP_DIMENSIONS) set[VALUE_PREFIX + d] = key.values[d];
    const add: Record<string, number | Set<number>> = {};
    for (const s of SUMS) if (agg.sums[s] !== 0) add[s] = agg.sums[s];
    for (const c of Object.keys(COUNTERS) as CounterName[]) {
      for (const [k, v] of agg.counters[c]) if (v !== 0) add[`${COUNTERS[c]}${k}`] = v;
    }
    if (agg.users.size > 0) add.u = new Set(agg.users);
    if (agg.seen.size > 0) add.t = new Set(agg.seen);
    return { set, add, ttl: this.ttlOf(key) };
  }

  /**
   * Decides where a batch's dimension items go (their value's item, or the remainder and the
   * value's series), one conditional write per bucket at most; see rollup-admission.ts. Never
   * rejects: items whose bucket could not be decided stay undecided (`add` refuses them).
   */
  admit(pending: readonly PendingRollup[]): Promise<PendingRollup[]> {
    return admitAll(this.#admissions, pending);
  }

  /**
   * Adds an aggregate to its item in one atomic UpdateItem (creating it on the first add). Before
   * a workspace's first total (dimension item), its marker says from when they are written (once
   * per process). An undecided dimension item is decided first.
   */
  async add(key: RollupKey, agg: Aggregate): Promise<void> {
    if (key.total) await this.#mark('totals', key.ws);
    if (key.dim) {
      // An undecided item (its bucket's admission failed) goes back to the queue as it is, to be decided then.
      if (undecided(key)) throw new Error('rollup value not yet placed');
      await this.#mark('dimensions', key.ws);
    }
    await this.#table.add(itemKey(key), this.#change(key, agg));
  }

  #mark(kind: MarkerKind, ws: string): Promise<unknown> {
    const id = `${kind}|${ws}`;
    let marking = this.#marked.get(id);
    if (!marking) {
      marking = this.#table.mark(kind, ws, this.#now());
      this.#marked.set(id, marking);
      // A failed write is tried again by the next add; this add fails (and is sent back to the queue).
      marking.catch(() => this.#marked.delete(id));
    }
    return marking;
  }

  /**
   * Where a segment's buckets can be read from the workspace's totals (dimension items): from the
   * returned time on (the segment's end when none can). Buckets that started before they were
   * written, plus TOTALS_SETTLE_MS, are read from the combinations.
   */
  async #cut(kind: MarkerKind, ws: string, segment: Segment): Promise<number> {
    const id = `${kind}|${ws}`;
    let known = this.#markedFrom.get(id);
    if (!known || (known.from === undefined && this.#now() - known.at >= UNMARKED_RECHECK_MS)) {
      known = { from: await this.#table.markedFrom(kind, ws), at: this.#now() };
      this.#markedFrom.set(id, known);
    }
    if (known.from === undefined) return segment.end;
    const cut = ceilTo(known.from + TOTALS_SETTLE_MS, GRANULARITY_MS[segment.gran]);
    return Math.min(segment.end, Math.max(segment.start, cut));
  }

  /** The item one `add` of `agg` creates where none was (bulk loading of whole aggregates, and its test). */
  itemOf(key: RollupKey, agg: Aggregate): Record<string, unknown> {
    return this.#table.itemOf(itemKey(key), this.#change(key, agg));
  }

  /**
   * One row per bucket and value of `dim` in one workspace and segment: the items of every
   * combination, grouped by that dimension's value (`all`: one row per bucket).
   */
  async query(ws: string, dim: Dimension, segment: Segment, read: RollupRead = {}): Promise<RollupRow[]> {
    // A count needs the bucket, the request count and the grouping value, not the item's sketches and histograms.
    const projection = read.figures ? ['b', 'g', 'n', ...(dim === 'all' ? [] : [VALUE_PREFIX + dim]), ...read.figures] : undefined;
    // The totals (ungrouped) or the dimension's items where they are complete; the combinations before.
    const cut = await this.#cut(dim === 'all' ? 'totals' : 'dimensions', ws, segment);
    // The segment's last bucket starts at `end - unit` (an end past a bucket's start, as callers may give, reads that bucket).
    const lean = cut <= segment.end - GRANULARITY_MS[segment.gran];
    const combinationsEnd = lean ? cut : segment.end;
    const source: ItemSource = dim === 'all' ? 'totals' : dim;
    const since = { ...segment, start: cut };
    const [before, after] = await Promise.all([
      combinationsEnd > segment.start ? this.#items(ws, { ...segment, end: combinationsEnd }, 'combinations', read.budget, projection) : [],
      !lean
        ? []
        : dim !== 'all' && read.only
          ? this.#valuesOnly(ws, dim, since, read.only, read, projection)
          : this.#items(ws, since, source, read.budget, projection),
    ]);
    const items = [...before, ...after];
    const rows = new Map<string, RollupRow>();
    for (const item of items) {
      const value = dim === 'all' ? '*' : String(item[VALUE_PREFIX + dim]);
      const bucket = Number(item.b);
      const id = `${bucket}#${value}`;
      const row = rows.get(id);
      if (row) mergeInto(row.agg, fromItem(item));
      else rows.set(id, { ws, gran: segment.gran, value, bucket, agg: fromItem(item) });
    }
    return [...rows.values()];
  }

  /**
   * The items of a few values of one dimension in a segment, without reading the other values'
   * items: each value's item in each bucket (where it was admitted), by key, and its series (where
   * it was in the remainder), one Query per value. One of the two exists for each bucket the value
   * had requests in.
   */
  async #valuesOnly(ws: string, dim: GroupDimension, segment: Segment, values: ReadonlySet<string>, read: RollupRead, projection?: readonly string[]) {
    const unit = GRANULARITY_MS[segment.gran];
    const buckets: string[] = [];
    // As #items reads: the buckets that start by `end - unit`.
    for (let t = segment.start; t <= segment.end - unit; t += unit) buckets.push(bucketKey(t));
    const keys = [...values].flatMap((v) => buckets.map((bucket) => ({ ws, gran: segment.gran, bucket, dimension: { dim, id: valueId(v) } })));
    const [own, series] = await Promise.all([
      this.#table.getMany(keys, projection),
      Promise.all([...values].map((v) => this.#items(ws, segment, { dim, id: valueId(v) }, read.budget, projection))),
    ]);
    if (read.budget) {
      read.budget.left -= own.length;
      if (read.budget.left < 0) throw new ReadBudgetSpent();
    }
    return [...own, ...series.flat()];
  }

  /** Every item of one workspace and segment, following pagination (within the budget, when one is given). */
  async #items(ws: string, segment: Segment, source: ItemSource, budget?: ReadBudget, projection?: readonly string[]): Promise<Record<string, unknown>[]> {
    const range = {
      ws,
      gran: segment.gran,
      first: bucketKey(segment.start),
      last: bucketKey(segment.end - GRANULARITY_MS[segment.gran]),
      totals: source === 'totals',
      dim: typeof source === 'string' && source !== 'totals' && source !== 'combinations' ? source : undefined,
      series: typeof source === 'object' ? source : undefined,
    };
    // One item past the budget tells that it is spent. The budget may be shared with queries in
    // flight beside this one: each page asks what is left of it then.
    const reach = budget ? { pageLimit: () => Math.max(1, budget.left + 1) } : {};
    const items: Record<string, unknown>[] = [];
    for await (const page of this.#table.pages(range, projection, reach)) {
      items.push(...page);
      if (budget) {
        budget.left -= page.length;
        if (budget.left < 0) throw new ReadBudgetSpent();
      }
    }
    return items;
  }

  /**
   * The latest UTC day (`YYYY-MM-DD`) in [first, last] on which the workspace has requests, or
   * undefined: one item read, where reading the days' rollups would read every combination of
   * model, key, status... each day holds (thousands, for a busy workspace).
   */
  async latestActiveDay(ws: string, first: string, last: string): Promise<string | undefined> {
    // Day buckets are `YYYY-MM-DDT00:00`.
    const item = await this.#table.newest({ ws, gran: 'd', first: `${first}T00:00`, last: `${last}T00:00` }, ['b']);
    return item ? bucketKey(Number(item.b)).slice(0, 10) : undefined;
  }

  /** Days (UTC, `YYYY-MM-DD`) in [from, to] on which the workspace has requests, newest first. */
  async activeDays(ws: string, from: number, to: number): Promise<string[]> {
    const rows = await this.query(ws, 'all', { gran: 'd', start: floorTo(from, DAY_MS), end: floorTo(to, DAY_MS) + DAY_MS });
    return rows
      .filter((r) => r.agg.sums.n > 0)
      .map((r) => bucketKey(r.bucket).slice(0, 10))
      .sort()
      .reverse();
  }
}

/** Sums rows into one aggregate. */
export function sumRows(rows: readonly RollupRow[]): Aggregate {
  const total = emptyAggregate();
  for (const r of rows) mergeInto(total, r.agg);
  return total;
}
