/**
 * Which values of a dimension get an item of their own in a bucket. A bucket admits at most
 * ADMITTED_PER_BUCKET values per dimension (the first to arrive, the busiest of a batch first);
 * every later value is added to the dimension's remainder ("other"). So a grouped or filtered
 * chart reads at most that many items (plus the remainder) per bucket however many keys, models or
 * configs an organisation has, and the sums stay exact: the remainder holds what the admitted
 * values do not.
 *
 * The admitted value ids of a bucket live in one item (store/rollup-items.ts, `RV#`), grown with a
 * conditional ADD that fails when a set would pass the bound, so concurrent workers never admit
 * more. Sets only grow, so what a process has seen of them stays true: it writes only for values
 * it has not seen admitted, in buckets it has not seen full.
 */
import { createHash } from 'node:crypto';
import type { RollupItems } from '../store/rollup-items.ts';
import { emptyAggregate, mergeInto, type Aggregate, type GroupDimension, type RollupKey } from './aggregate.ts';
import { bucketKey, type Granularity } from './time.ts';

/** Values with an item of their own, per dimension and bucket: minutes see few, days many. */
export const ADMITTED_PER_BUCKET: Readonly<Record<Granularity, number>> = { m: 10, h: 25, d: 50 };
/** Conditional writes tried per bucket before the values still asking go to the remainder. */
const ATTEMPTS = 3;
/** Buckets whose admitted sets a process remembers. */
const REMEMBERED_BUCKETS = 4096;

/** A dimension value's id in keys and admitted sets: short and fixed-length whatever the value. */
export const valueId = (value: string): string => createHash('sha256').update(value).digest('base64url').slice(0, 16);

type Sets = Record<string, Set<string>>;
interface Bucket {
  ws: string;
  gran: Granularity;
  bucket: number;
}

export class Admissions {
  readonly #table: RollupItems;
  readonly #ttlOf: (b: Bucket) => number;
  readonly #known = new Map<string, Sets>();

  constructor(table: RollupItems, ttlOf: (b: Bucket) => number) {
    this.#table = table;
    this.#ttlOf = ttlOf;
  }

  /**
   * The admitted ids of each asked dimension in one bucket, after admitting what room allows of
   * `wanted` (ids with their weights). A failed write rejects; no value is then decided.
   */
  async decide(b: Bucket, wanted: ReadonlyMap<string, ReadonlyMap<string, number>>): Promise<Sets> {
    const id = `${b.ws}|${b.gran}|${b.bucket}`;
    const max = ADMITTED_PER_BUCKET[b.gran];
    let sets: Sets = this.#known.get(id) ?? {};
    let asking = askFor(wanted, sets, max);
    for (let attempt = 0; attempt < ATTEMPTS && asking; attempt++) {
      const after = await this.#table.admit({ ws: b.ws, gran: b.gran, bucket: bucketKey(b.bucket), add: asking, max, ttl: this.#ttlOf(b) });
      if (after) {
        sets = after;
        break;
      }
      // Another worker admitted values meanwhile: see which, and ask for what room is left.
      sets = await this.#table.admitted(b.ws, b.gran, bucketKey(b.bucket));
      asking = askFor(wanted, sets, max);
    }
    this.#remember(id, sets);
    return sets;
  }

  #remember(id: string, sets: Sets): void {
    this.#known.delete(id);
    this.#known.set(id, sets);
    if (this.#known.size > REMEMBERED_BUCKETS) this.#known.delete(this.#known.keys().next().value as string);
  }
}

/** Per dimension, the wanted ids not admitted yet, busiest first, as many as the set has room for; undefined: none. */
function askFor(wanted: ReadonlyMap<string, ReadonlyMap<string, number>>, sets: Sets, max: number): Record<string, string[]> | undefined {
  const out: Record<string, string[]> = {};
  let any = false;
  for (const [dim, ids] of wanted) {
    const have = sets[dim] ?? new Set<string>();
    const room = max - have.size;
    if (room <= 0) continue;
    const fresh = [...ids]
      .filter(([i]) => !have.has(i))
      .sort((x, y) => y[1] - x[1])
      .slice(0, room)
      .map(([i]) => i);
    if (fresh.length) {
      out[dim] = fresh;
      any = true;
    }
  }
  return any ? out : undefined;
}

const bucketOf = (k: RollupKey): string => `${k.ws}|${k.gran}|${k.bucket}`;
/** A dimension item not yet placed (its value's item, the remainder, or the value's series). */
export const undecided = (k: RollupKey): boolean => k.dim !== undefined && !k.admitted && !k.other && !k.series;

/** One update a batch makes to one rollup item. */
export interface PendingRollup {
  key: RollupKey;
  agg: Aggregate;
  /** The messages whose events are in it. */
  messageIds: Set<string>;
}

/**
 * Decides every undecided dimension item of a batch, one conditional write per bucket at most:
 * admitted values keep their item, the rest of each dimension are merged into its remainder. Items
 * of a bucket whose write failed stay undecided (and go back to the queue as they are).
 */
export async function admitAll(admissions: Admissions, items: readonly PendingRollup[]): Promise<PendingRollup[]> {
  const byBucket = new Map<string, PendingRollup[]>();
  const out: PendingRollup[] = [];
  for (const p of items) {
    if (!undecided(p.key)) out.push(p);
    else byBucket.set(bucketOf(p.key), [...(byBucket.get(bucketOf(p.key)) ?? []), p]);
  }
  await Promise.all(
    [...byBucket.values()].map(async (group) => {
      try {
        out.push(...placed(group, await admissions.decide((group[0] as PendingRollup).key, wantedOf(group))));
      } catch {
        out.push(...group);
      }
    }),
  );
  return out;
}

/** The value ids a bucket's items ask for, per dimension, with their request counts. */
function wantedOf(group: readonly PendingRollup[]): Map<string, Map<string, number>> {
  const wanted = new Map<string, Map<string, number>>();
  for (const p of group) {
    const dim = p.key.dim as GroupDimension;
    const ids = wanted.get(dim) ?? new Map<string, number>();
    ids.set(valueId(p.key.values[dim]), p.agg.sums.n);
    wanted.set(dim, ids);
  }
  return wanted;
}

/**
 * A bucket's items once its sets are known: admitted ones as they are; the others each in one
 * remainder per dimension (for groups) and in their value's own series (for filters).
 */
function placed(group: readonly PendingRollup[], sets: Sets): PendingRollup[] {
  const out: PendingRollup[] = [];
  const others = new Map<string, PendingRollup>();
  for (const p of group) {
    const dim = p.key.dim as GroupDimension;
    if (sets[dim]?.has(valueId(p.key.values[dim]))) {
      out.push({ ...p, key: { ...p.key, admitted: true } });
      continue;
    }
    out.push({ ...p, key: { ...p.key, series: true } });
    let rest = others.get(dim);
    if (!rest) {
      rest = { key: { ...p.key, values: { ...p.key.values, [dim]: '*' }, other: true }, agg: emptyAggregate(), messageIds: new Set() };
      others.set(dim, rest);
    }
    mergeInto(rest.agg, p.agg);
    for (const m of p.messageIds) rest.messageIds.add(m);
  }
  return [...out, ...others.values()];
}

/**
 * Decides one bucket's dimension items knowing all of its values at once (bulk loading): the
 * busiest values of each dimension are admitted. Answers the items to write and the admitted sets.
 */
export function admitBusiest(bucket: readonly PendingRollup[]): { placed: PendingRollup[]; sets: Sets } {
  const first = bucket[0];
  if (!first) return { placed: [], sets: {} };
  const chosen = askFor(wantedOf(bucket), {}, ADMITTED_PER_BUCKET[first.key.gran]) ?? {};
  const sets: Sets = Object.fromEntries(Object.entries(chosen).map(([dim, ids]) => [dim, new Set(ids)]));
  return { placed: placed(bucket, sets), sets };
}
