/**
 * Index entries of API keys, so that a write about a few keys reads those keys and not the
 * organisation's (Gantry supports a million of them):
 * - USER: the keys of a user (`user_id`), for the user delete;
 * - CONFIG: the keys that pin a config (`defaults.config_id`, as written: an id or a slug), for the
 *   config delete;
 * - DUE: when the key lifecycle has something to do for a key next (`keyDueAt`), in time order, so
 *   its sweep reads the due keys only (`sk < now`).
 *
 * Entries are items of their own (adjacency items) written by the key's own transactions
 * (ApiKeyRepository; an accepted invite's keys get theirs just before its transaction, which would
 * not hold them), not attributes for a new GSI: they are read with strongly consistent queries
 * (a config delete must see the key pinned to it a moment ago) and need no change to the table.
 * DUE is one sorted partition per organisation rather than a partition per day: "everything due
 * before now" is then one range read, overdue and skipped keys included, with no oldest bucket to
 * remember (DynamoDB splits a hot item collection by sort key range on a table without LSIs).
 *
 * Exactness: every write of a key puts all the entries of the record it writes and deletes those of
 * the record it replaces that the new one lacks, so the last committed write of a key has put every
 * entry its record needs: an entry is never missing. Two writes racing on one key may leave an
 * extra entry behind; readers check each entry against the key record and delete extras, only if
 * nobody rewrote the entry since it was read (`write_id`).
 *
 * Tables with keys written before the index existed are backfilled once per organisation
 * (`backfill`, run by the key lifecycle), resumable from its marker; until the marker says done,
 * readers fall back to the organisation's full key list (ApiKeyRepository).
 */
import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { systemClock } from '../ports/clock.ts';
import { batchGet, batchPut } from './batch-io.ts';
import { Entity, type Item, type ItemKey } from './entity.ts';
import { ApiKey, type ApiKeyRecord } from './entities.ts';
import { prefixRange } from './prefix-range.ts';
import { queryAll, queryPages } from './paginate.ts';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

const DAY = 86_400_000;
/** An expiry warning goes out this long before `expires_at`. */
export const EXPIRY_WARNING_MS = 7 * DAY;
/** The upcoming-rotation e-mail goes out this long before `next_rotation_at`. */
export const rotationNoticeMs = (r: ApiKeyRecord): number => (r.rotation_policy?.rotation_period === 'weekly' ? DAY : 3 * DAY);

const at = (value: string | null | undefined): number | null => {
  if (!value) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
};

/**
 * The earliest time the key lifecycle (admin/api-keys/lifecycle.ts, `lifecycleOfKey`) has something
 * to do for this record, or null for never: the same conditions, read as times.
 */
export function keyDueAt(r: ApiKeyRecord): number | null {
  const times: number[] = [];
  const expires = at(r.expires_at);
  if (r.status !== 'expired' && expires !== null) {
    times.push(expires);
    if (r.expiry_warning_for !== r.expires_at) times.push(expires - EXPIRY_WARNING_MS);
  }
  const rotation = at(r.rotation_policy?.next_rotation_at);
  if (r.status === 'active' && rotation !== null) {
    times.push(rotation);
    if (r.rotation_notice_for !== r.rotation_policy?.next_rotation_at) times.push(rotation - rotationNoticeMs(r));
  }
  const transitionEnds = at(r.previous_key_expires_at);
  if (r.previous_key_hash && transitionEnds !== null) times.push(transitionEnds);
  const reset = at(r.usage_limits?.next_usage_reset_at);
  if (reset !== null) times.push(reset);
  return times.length ? Math.min(...times) : null;
}

/** Beyond year 9999 an ISO string no longer sorts by time; nothing is due there anyway. */
const LAST_SORTABLE = Date.UTC(9999, 11, 31);
const sortableTime = (ms: number): string => new Date(Math.max(0, ms)).toISOString();

export type KeyIndexName = 'USER' | 'CONFIG' | 'DUE';

export interface ApiKeyIndexRecord {
  organisation_id: string;
  key_id: string;
  index: KeyIndexName;
  /** The user id, the config reference, or the due time (ISO 8601, UTC). */
  value: string;
  /** The write that put the entry: an extra entry is deleted only if nobody rewrote it since. */
  write_id: string;
}

export const ApiKeyIndexEntry = new Entity<ApiKeyIndexRecord, 'organisation_id' | 'key_id' | 'index' | 'value'>({
  name: 'ApiKeyIndex',
  key: (r) =>
    r.index === 'DUE'
      ? { pk: `KEYIDX#${r.organisation_id}#DUE`, sk: `${r.value}#${r.key_id}` }
      : { pk: `KEYIDX#${r.organisation_id}#${r.index}#${r.value}`, sk: `APIKEY#${r.key_id}` },
});

/** How far the backfill of an organisation got: `after` is the last key id it indexed. */
export interface KeyIndexBackfillRecord {
  organisation_id: string;
  done: boolean;
  after: string | null;
  updated_at: string;
}

export const KeyIndexBackfill = new Entity<KeyIndexBackfillRecord, 'organisation_id'>({
  name: 'ApiKeyIndexBackfill',
  key: (r) => ({ pk: `KEYIDX#${r.organisation_id}`, sk: 'BACKFILL' }),
});

/** The entries a key record needs. */
export function indexEntries(r: ApiKeyRecord, writeId: string = randomUUID()): ApiKeyIndexRecord[] {
  const entry = (index: KeyIndexName, value: string): ApiKeyIndexRecord => ({
    organisation_id: r.organisation_id,
    key_id: r.id,
    index,
    value,
    write_id: writeId,
  });
  const out: ApiKeyIndexRecord[] = [];
  if (r.user_id) out.push(entry('USER', r.user_id));
  if (r.defaults?.config_id) out.push(entry('CONFIG', r.defaults.config_id));
  const due = keyDueAt(r);
  if (due !== null && due <= LAST_SORTABLE) out.push(entry('DUE', sortableTime(due)));
  return out;
}

/** The index entries of a key as items, for writers outside a transaction (the backfill, seeders). */
export const apiKeyIndexItems = (r: ApiKeyRecord): Item[] => indexEntries(r).map((e) => ApiKeyIndexEntry.toItem(e));

const sameKey = (a: ItemKey, b: ItemKey): boolean => a.pk === b.pk && a.sk === b.sk;

/**
 * The index half of a key write, for the same transaction: puts every entry of `next` (even
 * unchanged ones: see the top of this file) and deletes the entries of `previous` that `next` lacks.
 */
export function indexWrites(tableName: string, previous: ApiKeyRecord | undefined, next: ApiKeyRecord | undefined): TransactItem[] {
  const puts = next ? indexEntries(next) : [];
  const kept = puts.map((e) => ApiKeyIndexEntry.key(e));
  const dropped = (previous ? indexEntries(previous) : []).map((e) => ApiKeyIndexEntry.key(e)).filter((k) => !kept.some((p) => sameKey(p, k)));
  return [
    ...puts.map((e) => ({ Put: { TableName: tableName, Item: ApiKeyIndexEntry.toItem(e) } })),
    ...dropped.map((Key) => ({ Delete: { TableName: tableName, Key } })),
  ];
}

/** Batch reads and writes outside transactions: batch-io's retries and backoff. */
const RETRY = { clock: systemClock };
/** Keys read per page by the due sweep and the backfill: one BatchGetItem, one marker write. */
const PAGE = 100;

/** Where a key's record is (store/entities.ts, `ApiKey`). */
const keyRecordKey = (orgId: string, id: string): ItemKey => ({ pk: `ORG#${orgId}`, sk: `APIKEY#${id}` });

/** Reads of the index; the writes are in the key's transactions (ApiKeyRepository). */
export class ApiKeyIndex {
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  /** Organisations whose backfill is done: it never becomes undone. */
  readonly #ready = new Set<string>();

  constructor(doc: DynamoDBDocumentClient, tableName: string) {
    this.#doc = doc;
    this.#table = tableName;
  }

  /** True once every key of the organisation has its entries (new organisations start so). */
  async ready(orgId: string): Promise<boolean> {
    if (this.#ready.has(orgId)) return true;
    const marker = await this.#marker(orgId);
    if (marker?.done) this.#ready.add(orgId);
    return marker?.done === true;
  }

  async #marker(orgId: string): Promise<KeyIndexBackfillRecord | undefined> {
    const out = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: KeyIndexBackfill.key({ organisation_id: orgId }), ConsistentRead: true }));
    return out.Item ? KeyIndexBackfill.fromItem(out.Item) : undefined;
  }

  /** The marker of an organisation whose keys all have their entries (written with its first key). */
  static doneMarker(orgId: string, nowIso: string): Item {
    return KeyIndexBackfill.toItem({ organisation_id: orgId, done: true, after: null, updated_at: nowIso });
  }

  /** The keys whose USER or CONFIG entry has one of `values`, checked against their records. */
  async keysBy(orgId: string, index: 'USER' | 'CONFIG', values: readonly string[]): Promise<ApiKeyRecord[]> {
    const entries: ApiKeyIndexRecord[] = [];
    for (const value of new Set(values)) {
      const pk = ApiKeyIndexEntry.key({ organisation_id: orgId, key_id: '', index, value }).pk;
      const items = await queryAll(this.#doc, { TableName: this.#table, ...prefixRange(pk, 'APIKEY#'), ConsistentRead: true });
      entries.push(...items.map((i) => ApiKeyIndexEntry.fromItem(i)));
    }
    return this.#checked(orgId, entries, (e, r) => indexEntries(r, '').some((n) => n.index === e.index && n.value === e.value));
  }

  /**
   * The keys due at `nowMs` or before, a page at a time (each key once), checked against their
   * records: a key is yielded when its record is due, whichever of its entries led to it.
   */
  async *dueKeys(orgId: string, nowMs: number): AsyncGenerator<ApiKeyRecord[]> {
    const pk = `KEYIDX#${orgId}#DUE`;
    const seen = new Set<string>();
    const pages = queryPages(this.#doc, {
      TableName: this.#table,
      KeyConditionExpression: 'pk = :p AND sk < :t',
      // `<iso>#<id>` is below the ISO string of the next millisecond exactly when `<iso>` is at or before now.
      ExpressionAttributeValues: { ':p': pk, ':t': sortableTime(nowMs + 1) },
      ConsistentRead: true,
      Limit: PAGE,
    });
    for await (const items of pages) {
      const entries = items.map((i) => ApiKeyIndexEntry.fromItem(i)).filter((e) => !seen.has(e.key_id));
      const due = await this.#checked(orgId, entries, (e, r) => indexEntries(r, '').some((n) => n.index === 'DUE' && n.value === e.value));
      const fresh = due.filter((r) => !seen.has(r.id) && (keyDueAt(r) ?? Infinity) <= nowMs);
      for (const r of fresh) seen.add(r.id);
      if (fresh.length) yield fresh;
    }
  }

  /** The records of the entries' keys; entries their record no longer needs are deleted. */
  async #checked(orgId: string, entries: readonly ApiKeyIndexRecord[], needed: (e: ApiKeyIndexRecord, r: ApiKeyRecord) => boolean): Promise<ApiKeyRecord[]> {
    const records = await this.#records(orgId, [...new Set(entries.map((e) => e.key_id))]);
    const out = new Map<string, ApiKeyRecord>();
    for (const e of entries) {
      const r = records.get(e.key_id);
      if (r && needed(e, r)) out.set(r.id, r);
      else await this.#dropExtra(e);
    }
    return [...out.values()];
  }

  async #dropExtra(e: ApiKeyIndexRecord): Promise<void> {
    try {
      await this.#doc.send(
        new DeleteCommand({
          TableName: this.#table,
          Key: ApiKeyIndexEntry.key(e),
          ConditionExpression: '#w = :w',
          ExpressionAttributeNames: { '#w': 'write_id' },
          ExpressionAttributeValues: { ':w': e.write_id },
        }),
      );
    } catch (err) {
      // Rewritten (or removed) since it was read: whoever did that knew better.
      if (!(err instanceof Error && err.name === 'ConditionalCheckFailedException')) throw err;
    }
  }

  /** Key records by id, strongly consistent (batch-io's BatchGetItem, unprocessed keys asked again). */
  async #records(orgId: string, ids: readonly string[]): Promise<Map<string, ApiKeyRecord>> {
    const found = await batchGet(
      this.#doc,
      this.#table,
      ids.map((id) => keyRecordKey(orgId, id)),
      RETRY,
      undefined,
      true,
    );
    const out = new Map<string, ApiKeyRecord>();
    for (const item of found.values()) {
      const r = ApiKey.fromItem(item);
      out.set(r.id, r);
    }
    return out;
  }

  /**
   * Writes the entries of the organisation's keys that predate the index, a page at a time from
   * where the marker says the last run stopped, until done or `budgetMs` has passed (then the next
   * call goes on). `onKeys` sees each page of records (the lifecycle looks at them as before).
   * Returns true when done. Idempotent: entries are put, never conditionally.
   */
  async backfill(orgId: string, opts: { budgetMs: number; nowIso: () => string; onKeys?: (keys: ApiKeyRecord[]) => Promise<void> }): Promise<boolean> {
    if (this.#ready.has(orgId)) return true;
    const marker = await this.#marker(orgId);
    if (marker?.done) {
      this.#ready.add(orgId);
      return true;
    }
    const started = performance.now();
    const after = marker?.after ?? null;
    const pages = queryPages(this.#doc, {
      TableName: this.#table,
      ...prefixRange(`ORG#${orgId}`, 'APIKEY#'),
      ConsistentRead: true,
      Limit: PAGE,
      ...(after ? { ExclusiveStartKey: { ...keyRecordKey(orgId, after) } } : {}),
    });
    for await (const items of pages) {
      const keys = items.map((i) => ApiKey.fromItem(i));
      await this.putEntries(keys);
      await opts.onKeys?.(keys);
      const last = keys.at(-1);
      if (last) await this.#saveMarker({ organisation_id: orgId, done: false, after: last.id, updated_at: opts.nowIso() });
      // Only after a full page: a short one was the last, and the loop ends done.
      if (items.length === PAGE && performance.now() - started > opts.budgetMs) return false;
    }
    await this.#saveMarker({ organisation_id: orgId, done: true, after: null, updated_at: opts.nowIso() });
    this.#ready.add(orgId);
    return true;
  }

  async #saveMarker(m: KeyIndexBackfillRecord): Promise<void> {
    await this.#doc.send(new PutCommand({ TableName: this.#table, Item: KeyIndexBackfill.toItem(m) }));
  }

  /** The entries of these keys, put outside any transaction (BatchWriteItem). */
  async putEntries(keys: readonly ApiKeyRecord[]): Promise<void> {
    const failed = await batchPut(
      this.#doc,
      this.#table,
      keys.flatMap((k) => apiKeyIndexItems(k)),
      RETRY,
    );
    if (failed.size > 0) throw new Error(`${failed.size} key index entries could not be written`);
  }
}
