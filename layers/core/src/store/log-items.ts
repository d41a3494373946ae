/**
 * Request log items (their layout and why: observability/log-store.ts). A log lives under pk
 * `LOG#<ws>#<day>#<shard>`, sk `<started, ISO 8601>#<id>`: a log whose id tells its start is read
 * by that key; a pointer item `LOGID#<id>` finds the others (ids of earlier versions). The item
 * keeps the event as JSON text in `e` (without its bodies) and the bodies in `rqb` and `rsb`: three
 * attributes instead of fifty makes writes cheaper, and lists and aggregations read `e` alone
 * (filters run on the parsed events). `bt` names the ingest batch that wrote it, whose marker
 * item `LOGBATCH#<batch>` says whether that batch was counted in the rollups
 * (observability/ingest.ts).
 */
import { BatchGetCommand, GetCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Item, ItemKey } from './entity.ts';

export const LOG_TYPE = 'Log';
export const POINTER_TYPE = 'LogPointer';
export const BATCH_TYPE = 'LogBatch';

export const logPartition = (ws: string, day: string, shard: number): string => `LOG#${ws}#${day}#${shard}`;
export const logSort = (started: string, id: string): string => `${started}#${id}`;
export const pointerKey = (id: string): ItemKey => ({ pk: `LOGID#${id}`, sk: 'LOGID' });
export const batchKey = (batch: string): ItemKey => ({ pk: `LOGBATCH#${batch}`, sk: 'LOGBATCH' });

/** What places a log: its workspace (`-` when unknown), UTC day, shard, start (ISO 8601) and id. */
export interface LogPlace {
  ws: string;
  day: string;
  shard: number;
  started: string;
  id: string;
}

/** A log as stored: the event and its bodies as JSON text, and its expiry (Unix seconds). */
export interface LogContent {
  e: string;
  rqb?: string | undefined;
  rsb?: string | undefined;
  ttl: number;
}

export const logKey = (place: LogPlace): ItemKey => ({ pk: logPartition(place.ws, place.day, place.shard), sk: logSort(place.started, place.id) });

/** A log item; `batch`: the ingest batch writing it. */
export function logItem(place: LogPlace, content: LogContent, batch?: string): Item {
  return {
    ...logKey(place),
    _type: LOG_TYPE,
    ttl: content.ttl,
    e: content.e,
    ...(content.rqb !== undefined ? { rqb: content.rqb } : {}),
    ...(content.rsb !== undefined ? { rsb: content.rsb } : {}),
    ...(batch !== undefined ? { bt: batch } : {}),
  };
}

/**
 * The marker of an ingest batch whose rollups are done: its log items (`bt`) are counted, except
 * the events listed in `u` (not written, or not counted: they are processed again if they come back).
 */
export function batchItem(batch: string, unsettled: readonly string[], ttl: number): Item {
  return { ...batchKey(batch), _type: BATCH_TYPE, ttl, ...(unsettled.length > 0 ? { u: [...unsettled] } : {}) };
}

/** The id pointer of a log item. Earlier versions wrote it `pending` until the event was fully processed. */
export function pointerItem(log: Item, ids: { id: string; ws: string; org: unknown }, pending = false): Item {
  return {
    ...pointerKey(ids.id),
    _type: POINTER_TYPE,
    ws: ids.ws,
    org: ids.org,
    lpk: log.pk,
    lsk: log.sk,
    ttl: log.ttl,
    ...(pending ? { pending: true } : {}),
  };
}

/** One chunk of a shard's read: the sort keys in [lo, hi], newest first, from `start` on. */
export interface LogChunkRead {
  pk: string;
  lo: string;
  hi: string;
  limit: number;
  /** Read the bodies too; otherwise the sort key and the event only. */
  bodies: boolean;
  start?: Record<string, unknown> | undefined;
  /** Only items that pass this come back (every one read still counts in `scanned`). */
  filter?: { expression: string; names: Record<string, string>; values: Record<string, string> } | undefined;
}

export class LogItems {
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  constructor(doc: DynamoDBDocumentClient, tableName: string) {
    this.#doc = doc;
    this.#table = tableName;
  }

  /**
   * The first of `keys` (the places a log may be, one per workspace) that holds an item.
   * Consistent reads: a log a list has just shown is found.
   */
  async firstOf(keys: readonly ItemKey[]): Promise<Item | undefined> {
    if (keys.length === 1) {
      const out = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: keys[0], ConsistentRead: true }));
      return out.Item;
    }
    for (let i = 0; i < keys.length; i += 100) {
      let pending: ItemKey[] = keys.slice(i, i + 100);
      // Unprocessed keys are asked again (a few times: a lookup, not a write that must not be lost).
      for (let attempt = 0; pending.length > 0 && attempt < 5; attempt++) {
        const out = await this.#doc.send(new BatchGetCommand({ RequestItems: { [this.#table]: { Keys: pending, ConsistentRead: true } } }));
        const found = out.Responses?.[this.#table]?.[0];
        if (found) return found;
        pending = (out.UnprocessedKeys?.[this.#table]?.Keys ?? []) as ItemKey[];
      }
      if (pending.length > 0) throw new Error(`BatchGetItem left ${pending.length} key(s) unprocessed`);
    }
    return undefined;
  }

  /** A log item by id, through its pointer. Consistent reads: a log a list has just shown is found. */
  async byPointer(id: string): Promise<Item | undefined> {
    const pointer = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: pointerKey(id), ConsistentRead: true }));
    const p = pointer.Item;
    if (!p) return undefined;
    const out = await this.#doc.send(new GetCommand({ TableName: this.#table, Key: { pk: p.lpk, sk: p.lsk }, ConsistentRead: true }));
    return out.Item;
  }

  /**
   * One Query page of a shard. A page read merges several shards chunk by chunk, each chunk sized
   * from what the earlier ones gave, so the caller keeps where each shard stopped (`next`).
   */
  async chunk(r: LogChunkRead): Promise<{ items: Item[]; scanned: number; next?: Record<string, unknown> }> {
    const page = await this.#doc.send(
      new QueryCommand({
        TableName: this.#table,
        KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :lo AND :hi',
        ExpressionAttributeValues: { ':pk': r.pk, ':lo': r.lo, ':hi': r.hi, ...r.filter?.values },
        ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk', ...r.filter?.names, ...(r.bodies ? {} : { '#e': 'e' }) },
        ...(r.bodies ? {} : { ProjectionExpression: '#sk, #e' }),
        ...(r.filter ? { FilterExpression: r.filter.expression } : {}),
        ScanIndexForward: false,
        Limit: r.limit,
        ExclusiveStartKey: r.start,
      }),
    );
    const items = page.Items ?? [];
    return { items, scanned: page.ScannedCount ?? items.length, ...(page.LastEvaluatedKey ? { next: page.LastEvaluatedKey } : {}) };
  }
}
