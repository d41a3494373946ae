/**
 * Request log items. A log lives under pk `LOG#<ws>#<day>#<shard>`, sk `<created_at>#<id>`: per
 * workspace and UTC day, spread over a few shards so that one busy workspace does not make a hot
 * partition. Lists are Query operations, newest first, over the days the workspace's rollups say
 * have requests (plus the last two days), with every shard of a day read in parallel and merged;
 * the cursor is the sort key to continue below.
 * By id: a log id tells the request's start (observability/log-id.ts) and the shard is a hash of
 * the id, so with the workspace, which every caller knows (the caller's own, or its
 * organisation's), the id is the item's key: one item per log, no pointer. Ids that do not decode
 * (earlier versions' v4 UUIDs, or an event whose start is not its id's) have a pointer item
 * `LOGID#<id>`, read when the key finds nothing.
 * The items themselves are read and written by store/log-items.ts.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ValidationError } from '../http/errors.ts';
import type { BlobStore } from '../ports/blob.ts';
import type { Clock } from '../ports/clock.ts';
import { matches, prefilterOf, type LogFilters, type Prefilter } from './filters.ts';
import type { LogEvent } from './log-event.ts';
import type { RollupStore } from './rollups.ts';
import { fnv1a } from './sketch.ts';
import { DAY_MS, dayKey, iso } from './time.ts';
import { startOfLogId } from './log-id.ts';
import type { ItemKey } from '../store/entity.ts';
import { LogItems, logItem, logKey, logPartition, logSort, pointerItem, type LogPlace } from '../store/log-items.ts';

export const LOG_SHARDS = 4;

export const logShard = (id: string): number => fnv1a(id) % LOG_SHARDS;
export const logSk = (e: Pick<LogEvent, 'started_ms' | 'id'>): string => logSort(iso(e.started_ms), e.id);

const KEY_ATTRIBUTES = new Set(['pk', 'sk', '_type', 'ttl']);

export function eventOf(item: Record<string, unknown>): LogEvent {
  if (typeof item.e === 'string') {
    const event = JSON.parse(item.e) as LogEvent;
    if (typeof item.rqb === 'string') event.request_body = JSON.parse(item.rqb) as unknown;
    if (typeof item.rsb === 'string') event.response_body = JSON.parse(item.rsb) as unknown;
    return event;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) if (!KEY_ATTRIBUTES.has(k)) out[k] = v;
  return out as unknown as LogEvent;
}

export interface LogPage {
  events: LogEvent[];
  /** Where the next page starts; absent on the last page. */
  cursor?: string;
  /**
   * Present when the read budget ended the page before it was full: the time (ISO 8601) the page
   * searched down to. Every match from the page's start down to it is on the page; the cursor
   * continues below it.
   */
  scannedUntil?: string;
  /** Items read for this page. */
  examined: number;
}

export interface PageOptions {
  limit: number;
  cursor?: string | undefined;
  /** Read the bodies too (exports); lists and aggregations leave them out. */
  bodies?: boolean;
  /** Items read at most for this page (filters may skip many); the page may come back short, with a cursor and `scannedUntil`. */
  maxExamined?: number;
}

const encodeCursor = (sk: string): string => Buffer.from(JSON.stringify({ b: sk })).toString('base64url');

/** The time of a sort key (`<created_at>#<id>`), or of a day's top (`dayTop`). */
const timeOf = (sk: string): string => sk.slice(0, sk.indexOf('#'));

/** Above every sort key of the day: where a page stops that has read the days above it and nothing of this one. */
const dayTop = (day: string): string => `${day}T23:59:59.999Z#~`;

function decodeCursor(cursor: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { b?: unknown };
    if (typeof parsed.b === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(parsed.b)) return parsed.b;
  } catch {
    // falls through
  }
  throw ValidationError.field('cursor', 'is not a cursor this API returned');
}

/**
 * Items a list page reads at most: enough for a filter that matches one log in 500 to fill a page
 * of 20 (some 0.5 s on DynamoDB Local, 13 MB read). A rarer filter's page comes back short, saying
 * so (`scannedUntil`), with a cursor.
 */
export const LIST_MAX_EXAMINED = 10_000;
/** Items each workspace of an organisation-wide list may read at least. */
const MIN_SHARE = 100;
/** Items one Query reads at most. */
const MAX_CHUNK = 250;

/** What one page reads, shared by the days it visits. */
interface DayRead {
  lo: string;
  hi: string;
  /** The cursor's own sort key, read again by BETWEEN and skipped. */
  exclusive: string | undefined;
  f: LogFilters;
  /** The filters DynamoDB can apply first (filters.ts `prefilterOf`). */
  prefilter: Prefilter | undefined;
  bodies: boolean;
  budget: { left: number };
}

interface ShardState {
  pk: string;
  matches: { sk: string; event: LogEvent }[];
  /** The last sort key read: everything above it (within the range) has been read. */
  lowest?: string;
  start?: Record<string, unknown>;
  exhausted: boolean;
}

export class LogStore {
  readonly #items: LogItems;
  readonly #clock: Clock;
  readonly #retentionDays: number;
  readonly #rollups: RollupStore;

  constructor(opts: { doc: DynamoDBDocumentClient; tableName: string; clock: Clock; logRetentionDays: number; rollups: RollupStore }) {
    this.#items = new LogItems(opts.doc, opts.tableName);
    this.#clock = opts.clock;
    this.#retentionDays = opts.logRetentionDays;
    this.#rollups = opts.rollups;
  }

  ttlOf(e: LogEvent): number {
    return Math.floor(e.started_ms / 1000) + this.#retentionDays * 86_400;
  }

  #placeOf(e: LogEvent): LogPlace {
    return { ws: e.workspace_id ?? '-', day: dayKey(e.started_ms), shard: logShard(e.id), started: iso(e.started_ms), id: e.id };
  }

  /** Where the event's log item is. */
  keyOf(e: LogEvent): ItemKey {
    return logKey(this.#placeOf(e));
  }

  /** The event's log item; `batch`: the ingest batch writing it (observability/ingest.ts). */
  itemOf(e: LogEvent, batch?: string): Record<string, unknown> {
    const { request_body: rq, response_body: rs, ...rest } = e;
    return logItem(
      this.#placeOf(e),
      {
        ttl: this.ttlOf(e),
        e: JSON.stringify(rest),
        ...(rq !== undefined ? { rqb: JSON.stringify(rq) } : {}),
        ...(rs !== undefined ? { rsb: JSON.stringify(rs) } : {}),
      },
      batch,
    );
  }

  /** Whether a lookup by id needs the event's pointer: its id does not tell its start. */
  needsPointer(e: LogEvent): boolean {
    return startOfLogId(e.id) !== e.started_ms;
  }

  /** The id pointer, for the events that need one. */
  pointerOf(e: LogEvent): Record<string, unknown> {
    return pointerItem(this.itemOf(e), { id: e.id, ws: e.workspace_id ?? '-', org: e.organisation_id });
  }

  /**
   * A log by id; undefined when unknown or past the retention. `workspaces`: where the caller may
   * read (its workspace, or its organisation's, with `-` for the owner); asked only for ids that
   * tell their start.
   */
  async get(id: string, workspaces: readonly string[] | (() => Promise<readonly string[]>)): Promise<LogEvent | undefined> {
    const started = startOfLogId(id);
    let item: Record<string, unknown> | undefined;
    if (started !== undefined) {
      const where = typeof workspaces === 'function' ? await workspaces() : workspaces;
      const place = { day: dayKey(started), shard: logShard(id), started: iso(started), id };
      item = where.length > 0 ? await this.#items.firstOf(where.map((ws) => logKey({ ws, ...place }))) : undefined;
    }
    // An older id, or a log whose start is not its id's: its pointer.
    item ??= await this.#items.byPointer(id);
    if (!item) return undefined;
    const event = eventOf(item);
    return event.started_ms < this.#clock.now() - this.#retentionDays * DAY_MS ? undefined : event;
  }

  /**
   * One page of a workspace's logs matching the filters, newest first. At most `maxExamined` items
   * are read: a page whose filter matches rarely comes back short, with a cursor where reading stopped.
   */
  async page(ws: string, f: LogFilters, opts: PageOptions): Promise<LogPage> {
    const hi = opts.cursor ? decodeCursor(opts.cursor) : `${iso(f.to)}#~`;
    const lo = iso(f.from);
    if (hi < lo) return { events: [], examined: 0 };
    const max = opts.maxExamined ?? LIST_MAX_EXAMINED;
    const read: DayRead = {
      lo,
      hi,
      exclusive: opts.cursor ? hi : undefined,
      f,
      prefilter: prefilterOf(f),
      bodies: opts.bodies ?? false,
      budget: { left: max },
    };
    const out: { sk: string; event: LogEvent }[] = [];
    const done = (cursor?: string, scannedUntil?: string): LogPage => ({
      events: out.map((m) => m.event),
      ...(cursor !== undefined ? { cursor } : {}),
      ...(scannedUntil !== undefined ? { scannedUntil } : {}),
      examined: max - read.budget.left,
    });
    for await (const day of this.#days(ws, f, hi.slice(0, 10))) {
      const need = opts.limit - out.length;
      const { matches, boundary } = await this.#readDay(ws, day, need, read);
      out.push(...matches.slice(0, need));
      if (out.length >= opts.limit) return done(encodeCursor((out[out.length - 1] as { sk: string }).sk));
      // The budget ended the page: everything above the boundary was read.
      if (boundary !== undefined) return done(encodeCursor(boundary), timeOf(boundary));
    }
    return done();
  }

  /**
   * One page over several workspaces, newest first: each workspace's page from the same cursor,
   * merged. A workspace whose page stopped short (its read budget spent) has not been read below
   * its cursor, so the merged page stops there too.
   */
  async pageAcross(workspaces: readonly string[], f: LogFilters, opts: PageOptions): Promise<LogPage> {
    if (workspaces.length === 1) return this.page(workspaces[0] as string, f, opts);
    // The page's budget is shared, so that an organisation with many workspaces reads no more.
    const share = { ...opts, maxExamined: Math.max(Math.ceil((opts.maxExamined ?? LIST_MAX_EXAMINED) / workspaces.length), MIN_SHARE) };
    const pages = await Promise.all(workspaces.map((ws) => this.page(ws, f, share)));
    const floor = pages
      .filter((p) => p.cursor !== undefined && p.events.length < opts.limit)
      .map((p) => decodeCursor(p.cursor as string))
      .reduce<string | undefined>((a, b) => (a === undefined || b > a ? b : a), undefined);
    const all = pages.flatMap((p) => p.events.map((event) => ({ sk: logSk(event), event })));
    const kept = all
      .filter((m) => floor === undefined || m.sk >= floor)
      .sort((a, b) => (a.sk < b.sk ? 1 : a.sk > b.sk ? -1 : 0))
      .slice(0, opts.limit);
    const examined = pages.reduce((n, p) => n + p.examined, 0);
    const events = kept.map((m) => m.event);
    const more = pages.some((p) => p.cursor !== undefined) || all.length > kept.length;
    if (!more) return { events, examined };
    if (kept.length === opts.limit) return { events, cursor: encodeCursor((kept[kept.length - 1] as { sk: string }).sk), examined };
    // Short: a workspace's budget ended its page, and the merged page stops where it did.
    return floor === undefined ? { events, examined } : { events, cursor: encodeCursor(floor), scannedUntil: timeOf(floor), examined };
  }

  /** Every matching log, page by page; throws once more than `maxExamined` items were read in all. */
  async *all(ws: string, f: LogFilters, opts: { bodies?: boolean; maxExamined: number; pageSize?: number }): AsyncGenerator<LogEvent> {
    let cursor: string | undefined;
    let left = opts.maxExamined;
    do {
      if (left <= 0) throw new TooManyLogsError(opts.maxExamined);
      const page = await this.page(ws, f, { limit: opts.pageSize ?? 500, cursor, bodies: opts.bodies ?? false, maxExamined: Math.min(left, 5_000) });
      for (const e of page.events) yield e;
      cursor = page.cursor;
      left -= page.examined;
    } while (cursor);
  }

  /**
   * The days to read, newest first, found as the page goes (most pages end in the first day): the
   * days the rollups say have requests, one Query each, and the last two days (their rollups may lag).
   */
  async *#days(ws: string, f: LogFilters, hiDay: string): AsyncGenerator<string> {
    const now = this.#clock.now();
    const first = dayKey(f.from);
    let next = dayKey(f.to) < hiDay ? dayKey(f.to) : hiDay;
    const recent = [dayKey(now), dayKey(now - DAY_MS)];
    let active: string | undefined;
    while (next >= first) {
      if (active === undefined || active > next) active = await this.#rollups.latestActiveDay(ws, first, next);
      const day = recent.find((d) => d <= next && d >= first && (active === undefined || d > active)) ?? active;
      if (day === undefined) return;
      yield day;
      next = dayKey(Date.parse(day) - DAY_MS);
    }
  }

  /**
   * A day's matches, newest first, read as a merge of its shards that reads no more than it must:
   * every shard is read in small chunks, sized from the matches the chunks so far gave, and a match
   * is known to be in order only above `boundary`, the highest place where a shard still open
   * stopped. Returns once `need` matches are known, the shards are exhausted (no boundary), or the
   * budget is spent.
   */
  async #readDay(ws: string, day: string, need: number, r: DayRead): Promise<{ matches: { sk: string; event: LogEvent }[]; boundary?: string }> {
    const shards: ShardState[] = Array.from({ length: LOG_SHARDS }, (_, s) => ({ pk: logPartition(ws, day, s), matches: [], exhausted: false }));
    // Where a shard not read yet stops: the page's start, or the day's top when the page began above it.
    const top = r.hi < dayTop(day) ? r.hi : dayTop(day);
    let read = 0;
    for (;;) {
      const open = shards.filter((s) => !s.exhausted);
      const boundary = open.length ? open.map((s) => s.lowest ?? top).reduce((a, b) => (a > b ? a : b)) : undefined;
      const known = shards
        .flatMap((s) => s.matches)
        .filter((m) => boundary === undefined || m.sk >= boundary)
        .sort((a, b) => (a.sk < b.sk ? 1 : a.sk > b.sk ? -1 : 0));
      if (known.length >= need || boundary === undefined || r.budget.left <= 0) return { matches: known, ...(boundary !== undefined ? { boundary } : {}) };
      // Matches per item read so far (a guess of one before the first chunk), never below 1 in 100.
      const found = shards.reduce((n, s) => n + s.matches.length, 0);
      const rate = read ? Math.max(found / read, 0.01) : 1;
      const chunk = Math.ceil(((need - known.length) / rate / open.length) * 1.25) + 2;
      // The budget split evenly: a shard left unread would hold the page's boundary where it began.
      const fair = Math.max(Math.floor(r.budget.left / open.length), 1);
      const reads = await Promise.all(open.map((s) => this.#readChunk(s, Math.min(chunk, MAX_CHUNK, fair), r)));
      read += reads.reduce((a, b) => a + b, 0);
    }
  }

  /** Reads up to `limit` more items of a shard (fewer if the budget is short); returns how many were read. */
  async #readChunk(s: ShardState, limit: number, r: DayRead): Promise<number> {
    const n = Math.min(limit, r.budget.left);
    if (n <= 0) return 0;
    r.budget.left -= n;
    const { items, scanned, next } = await this.#items.chunk({ pk: s.pk, lo: r.lo, hi: r.hi, limit: n, bodies: r.bodies, start: s.start, filter: r.prefilter });
    // Give back what was not read (a shard's last chunk).
    r.budget.left += n - scanned;
    for (const item of items) {
      const sk = String(item.sk);
      s.lowest = sk;
      if (sk === r.exclusive) continue;
      const event = eventOf(item);
      if (matches(event, r.f)) s.matches.push({ sk, event });
    }
    // Read down to the last item evaluated, whether or not the prefilter let it through.
    if (next) s.lowest = String(next.sk);
    s.start = next;
    if (!s.start) s.exhausted = true;
    return scanned;
  }
}

/** The filters need the logs themselves, and more of them than one answer may read. */
export class TooManyLogsError extends ValidationError {
  constructor(max: number) {
    super([
      {
        path: 'time_of_generation_min',
        message: `these filters are answered from the request logs, and the range holds more than ${max} of them: narrow the time range or filter on one dimension only (answered from rollups)`,
      },
    ]);
  }
}

/** Loads bodies kept in blob storage back into the event. */
export async function withBodies(e: LogEvent, blobs: BlobStore): Promise<LogEvent> {
  const out = { ...e };
  for (const kind of ['request', 'response'] as const) {
    const ref = e[`${kind}_body_ref`];
    if (!ref) continue;
    const bytes = await blobs.get(ref);
    if (bytes) out[`${kind}_body`] = JSON.parse(Buffer.from(bytes).toString('utf8')) as unknown;
  }
  return out;
}
