/**
 * Rollup items (their meaning and arithmetic: observability/rollups.ts): pk `RC#<ws>#<gran>`, sk
 * `<bucket>#<combination>` (bucket as `2026-01-01T10:05`, combination a fixed-length hash of the
 * dimension values), so a time range of one workspace is one Query; beside them the workspace's
 * totals, pk `RT#<ws>#<gran>`, sk `<bucket>`; and one item per dimension value, pk
 * `RD#<ws>#<gran>#<dim>`, sk `<bucket>#<value id>` (`<bucket>#~` for the values past the bucket's
 * first few, counted together), whose admitted values per bucket are listed in pk `RV#<ws>#<gran>`,
 * sk `<bucket>`. Items are only ever added to, with UpdateItem's ADD, which is atomic.
 */
import { GetCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { systemClock } from '../ports/clock.ts';
import { batchGet } from './batch-io.ts';
import type { Item, ItemKey } from './entity.ts';
import { queryPages, type QueryReach } from './paginate.ts';

export const ROLLUP_TYPE = 'Rollup';

export const rollupPartition = (ws: string, gran: string): string => `RC#${ws}#${gran}`;
export const rollupSort = (bucket: string, combination: string): string => `${bucket}#${combination}`;
/**
 * A workspace's totals: one item per granularity and bucket, the sum of every combination, pk
 * `RT#<ws>#<gran>`, sk the bucket. What an unfiltered chart reads: one item per data point,
 * however many models, keys and statuses the bucket saw.
 */
export const totalsPartition = (ws: string, gran: string): string => `RT#${ws}#${gran}`;
/** A workspace's items per value of one dimension (model, api_key ...), pk `RD#<ws>#<gran>#<dim>`. */
export const dimensionPartition = (ws: string, gran: string, dim: string): string => `RD#${ws}#${gran}#${dim}`;
/**
 * One value's own series (`RS#<ws>#<gran>#<dim>#<value id>`, sk the bucket), for the buckets where
 * the value is in the remainder: what a filter on that value reads there.
 */
export const seriesPartition = (ws: string, gran: string, dim: string, id: string): string => `RS#${ws}#${gran}#${dim}#${id}`;
/** The id of a dimension's remainder: `~` sorts after every value id (base64url). */
export const OTHER_ID = '~';
/** Which values of each dimension a bucket admitted (one item per bucket), pk `RV#<ws>#<gran>`. */
export const admissionKey = (ws: string, gran: string, bucket: string): ItemKey => ({ pk: `RV#${ws}#${gran}`, sk: bucket });

/** What a marker records the start of: the totals, or the dimension items. */
export type MarkerKind = 'totals' | 'dimensions';
const MARKER = { totals: 'RTFROM', dimensions: 'RDFROM' } as const;
/** Since when a workspace's totals (or dimension items) are written (pk `RTFROM#<ws>`, `from`: Unix ms). */
export const markerKey = (kind: MarkerKind, ws: string): ItemKey => ({ pk: `${MARKER[kind]}#${ws}`, sk: MARKER[kind] });
export const totalsMarkerKey = (ws: string): ItemKey => markerKey('totals', ws);

export interface RollupItemKey {
  ws: string;
  gran: string;
  /** The bucket's start as `2026-01-01T10:05`. */
  bucket: string;
  /** The combination's hash; absent for the workspace's total of the bucket and for dimension items. */
  combination?: string | undefined;
  /** A dimension item: the dimension, and the value's id (OTHER_ID for the remainder); `series`: the value's own series item. */
  dimension?: { dim: string; id: string; series?: boolean | undefined } | undefined;
}

export const rollupItemKey = (k: RollupItemKey): ItemKey => {
  if (k.dimension?.series) return { pk: seriesPartition(k.ws, k.gran, k.dimension.dim, k.dimension.id), sk: k.bucket };
  if (k.dimension) return { pk: dimensionPartition(k.ws, k.gran, k.dimension.dim), sk: rollupSort(k.bucket, k.dimension.id) };
  return k.combination === undefined
    ? { pk: totalsPartition(k.ws, k.gran), sk: k.bucket }
    : { pk: rollupPartition(k.ws, k.gran), sk: rollupSort(k.bucket, k.combination) };
};

/** One change to an item: attributes set, amounts (and sets of numbers) added, the TTL set once. */
export interface RollupChange {
  set: Record<string, unknown>;
  add: Record<string, number | Set<number>>;
  /** Unix seconds; kept from the item's first write. */
  ttl: number;
}

/** The bucket range of one workspace and granularity: every combination of the buckets from `first` to `last`. */
export interface RollupRange {
  ws: string;
  gran: string;
  first: string;
  last: string;
  /** The workspace's totals (one item per bucket) instead of its combinations. */
  totals?: boolean | undefined;
  /** The items per value of this dimension instead of the combinations. */
  dim?: string | undefined;
  /** One value's series items (one per bucket where it was in the remainder). */
  series?: { dim: string; id: string } | undefined;
}

// `$` sorts right after `#`, so every combination (or value) of the last bucket is in.
const rangeCondition = (r: RollupRange) => ({
  KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
  ExpressionAttributeValues: r.series
    ? { ':pk': seriesPartition(r.ws, r.gran, r.series.dim, r.series.id), ':lo': r.first, ':hi': r.last }
    : r.totals
      ? { ':pk': totalsPartition(r.ws, r.gran), ':lo': r.first, ':hi': r.last }
      : { ':pk': r.dim ? dimensionPartition(r.ws, r.gran, r.dim) : rollupPartition(r.ws, r.gran), ':lo': `${r.first}#`, ':hi': `${r.last}$` },
});

/** Value ids to add to a bucket's admitted sets, per dimension, and how many each set may hold after. */
export interface Admission {
  ws: string;
  gran: string;
  bucket: string;
  add: Record<string, readonly string[]>;
  max: number;
  ttl: number;
}
const admittedAttr = (dim: string) => `v_${dim}`;

const projectionOf = (attributes: readonly string[]) => ({
  ProjectionExpression: attributes.map((_, i) => `#p${i}`).join(', '),
  ExpressionAttributeNames: Object.fromEntries(attributes.map((a, i) => [`#p${i}`, a])),
});

export class RollupItems {
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  constructor(doc: DynamoDBDocumentClient, tableName: string) {
    this.#doc = doc;
    this.#table = tableName;
  }

  /** Applies a change in one atomic UpdateItem (creating the item on its first change). */
  async add(key: RollupItemKey, change: RollupChange): Promise<void> {
    const names: Record<string, string> = { '#ttl': 'ttl' };
    const values: Record<string, unknown> = { ':ttl': change.ttl };
    const sets = ['#ttl = if_not_exists(#ttl, :ttl)'];
    const adds: string[] = [];
    Object.entries(change.set).forEach(([attr, value], i) => {
      names[`#s${i}`] = attr;
      values[`:s${i}`] = value;
      sets.push(`#s${i} = :s${i}`);
    });
    Object.entries(change.add).forEach(([attr, value], i) => {
      names[`#a${i}`] = attr;
      values[`:a${i}`] = value;
      adds.push(`#a${i} :a${i}`);
    });
    await this.#doc.send(
      new UpdateCommand({
        TableName: this.#table,
        Key: rollupItemKey(key),
        UpdateExpression: `SET ${sets.join(', ')}${adds.length ? ` ADD ${adds.join(', ')}` : ''}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
  }

  /** The item one `add` of `change` creates where none was (bulk loading, and its test). */
  itemOf(key: RollupItemKey, change: RollupChange): Item {
    return { ...rollupItemKey(key), ttl: change.ttl, ...change.set, ...change.add };
  }

  /** The pages of a range's items, only `attributes` of each when given. */
  pages(range: RollupRange, attributes?: readonly string[], reach: QueryReach = {}): AsyncGenerator<Item[]> {
    return queryPages(this.#doc, { TableName: this.#table, ...rangeCondition(range), ...(attributes ? projectionOf(attributes) : {}) }, reach);
  }

  /** The items of these keys that exist (only `attributes` of each when given), 100 keys a request. */
  async getMany(keys: readonly RollupItemKey[], attributes?: readonly string[]): Promise<Item[]> {
    const found = await batchGet(this.#doc, this.#table, keys.map(rollupItemKey), { clock: systemClock, attempts: 5 }, attributes);
    return [...found.values()];
  }

  /**
   * Records, once, since when the workspace's totals (or dimension items) are written (`from`, Unix
   * ms); an earlier record is kept (if_not_exists). Answers the recorded time.
   */
  async mark(kind: MarkerKind, ws: string, from: number): Promise<number> {
    const out = await this.#doc.send(
      new UpdateCommand({
        TableName: this.#table,
        Key: markerKey(kind, ws),
        UpdateExpression: 'SET #f = if_not_exists(#f, :f), #t = :t',
        ExpressionAttributeNames: { '#f': 'from', '#t': '_type' },
        ExpressionAttributeValues: { ':f': from, ':t': kind === 'totals' ? 'RollupTotalsFrom' : 'RollupDimensionsFrom' },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Number(out.Attributes?.from ?? from);
  }

  /** Since when the workspace's totals (or dimension items) are written (Unix ms), or undefined when they are not yet. */
  async markedFrom(kind: MarkerKind, ws: string): Promise<number | undefined> {
    const out = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: markerKey(kind, ws), ConsistentRead: true }));
    return out.Item ? Number(out.Item.from) : undefined;
  }

  /**
   * Adds value ids to a bucket's admitted sets in one conditional UpdateItem: it fails as a whole
   * (answering undefined) when any set would then hold more than `max`. Answers the sets after.
   */
  async admit(a: Admission): Promise<Record<string, Set<string>> | undefined> {
    const dims = Object.keys(a.add).filter((d) => (a.add[d]?.length ?? 0) > 0);
    const names: Record<string, string> = { '#ttl': 'ttl', '#t': '_type' };
    const values: Record<string, unknown> = { ':ttl': a.ttl, ':t': 'RollupAdmission' };
    const conditions: string[] = [];
    dims.forEach((d, i) => {
      const ids = a.add[d] as readonly string[];
      names[`#v${i}`] = admittedAttr(d);
      values[`:v${i}`] = new Set(ids);
      values[`:n${i}`] = a.max - ids.length;
      conditions.push(`(attribute_not_exists(#v${i}) OR size(#v${i}) <= :n${i})`);
    });
    try {
      const out = await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: admissionKey(a.ws, a.gran, a.bucket),
          UpdateExpression: `SET #ttl = if_not_exists(#ttl, :ttl), #t = :t ADD ${dims.map((_, i) => `#v${i} :v${i}`).join(', ')}`,
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
      return admittedSets(out.Attributes);
    } catch (err) {
      if (err instanceof Error && err.name === 'ConditionalCheckFailedException') return undefined;
      throw err;
    }
  }

  /** A bucket's admitted value ids per dimension (a consistent read). */
  async admitted(ws: string, gran: string, bucket: string): Promise<Record<string, Set<string>>> {
    const out = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: admissionKey(ws, gran, bucket), ConsistentRead: true }));
    return admittedSets(out.Item);
  }

  /** The newest item of a range (the given attributes of it), if any: one item read. */
  async newest(range: RollupRange, attributes: readonly string[]): Promise<Item | undefined> {
    const out = await this.#doc.send(
      new QueryCommand({ TableName: this.#table, ...rangeCondition(range), ...projectionOf(attributes), ScanIndexForward: false, Limit: 1 }),
    );
    return out.Items?.[0];
  }
}

function admittedSets(item: Item | undefined): Record<string, Set<string>> {
  const out: Record<string, Set<string>> = {};
  for (const [attr, v] of Object.entries(item ?? {})) if (attr.startsWith('v_') && v instanceof Set) out[attr.slice(2)] = v as Set<string>;
  return out;
}
