/**
 * Writes that must not be lost: BatchWriteItem and BatchGetItem re-send what DynamoDB left
 * unprocessed, and single calls are retried, with exponential backoff and jitter (through the
 * clock, so tests do not wait). The log-ingest worker writes and reads its items through these.
 */
import { BatchGetCommand, BatchWriteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../ports/clock.ts';
import type { Item, ItemKey } from './entity.ts';

export interface RetryOptions {
  clock: Clock;
  /** Tries in all (default 8). */
  attempts?: number;
  /** First backoff, doubled each time up to `maxMs` (defaults 25 and 2000). */
  baseMs?: number;
  maxMs?: number;
  random?: () => number;
}

/** Errors that fail the same way every time: retrying them only delays the answer. */
const PERMANENT = new Set(['ValidationException', 'ConditionalCheckFailedException', 'ResourceNotFoundException', 'AccessDeniedException']);

export const isPermanent = (err: unknown): boolean => err instanceof Error && PERMANENT.has(err.name);

function delay(attempt: number, opts: RetryOptions): number {
  const base = Math.min((opts.baseMs ?? 25) * 2 ** attempt, opts.maxMs ?? 2000);
  return base * (0.5 + (opts.random ?? Math.random)() / 2);
}

/** Runs `fn` until it succeeds, a permanent error, or the attempts run out (then rethrows). */
export async function withRetry<T>(fn: () => Promise<T>, opts: RetryOptions): Promise<T> {
  const attempts = opts.attempts ?? 8;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (isPermanent(err) || attempt + 1 >= attempts) throw err;
      await opts.clock.sleep(delay(attempt, opts));
    }
  }
}

/** Puts one item, retried as withRetry retries. */
export async function putItem(doc: DynamoDBDocumentClient, table: string, item: Item, opts: RetryOptions): Promise<void> {
  await withRetry(() => doc.send(new PutCommand({ TableName: table, Item: item })), opts);
}

/** Where an item is: its key as one string (the key of batchGet's answer). */
export const keyString = (k: { pk?: unknown; sk?: unknown }): string => `${String(k.pk)}\u0000${String(k.sk)}`;

/**
 * The items' indexes in requests of at most `size`, never splitting a group: consecutive items of
 * the same `groupOf` (an item and its id pointer) go in the same request.
 */
function chunksOf(count: number, size: number, groupOf?: (i: number) => number): number[][] {
  const chunks: number[][] = [];
  let chunk: number[] = [];
  for (let i = 0; i < count; ) {
    let end = i + 1;
    while (groupOf && end < count && groupOf(end) === groupOf(i)) end++;
    if (chunk.length > 0 && chunk.length + (end - i) > size) {
      chunks.push(chunk);
      chunk = [];
    }
    for (; i < end; i++) chunk.push(i);
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/**
 * Puts every item, 25 (the most BatchWriteItem takes) per request, re-sending unprocessed ones and
 * retrying failed requests; consecutive items of the same `groupOf` share a request. Returns the
 * indexes of the items that could not be written after every attempt.
 */
export function batchPut(
  doc: DynamoDBDocumentClient,
  table: string,
  items: readonly Item[],
  opts: RetryOptions,
  groupOf?: (i: number) => number,
): Promise<Set<number>> {
  return batchWrite(
    doc,
    table,
    items.map((Item) => ({ PutRequest: { Item } })),
    opts,
    groupOf,
  );
}

/** Deletes every key as batchPut puts items; answers the indexes of the keys not deleted after every attempt. */
export function batchDelete(doc: DynamoDBDocumentClient, table: string, keys: readonly ItemKey[], opts: RetryOptions): Promise<Set<number>> {
  return batchWrite(
    doc,
    table,
    keys.map((Key) => ({ DeleteRequest: { Key } })),
    opts,
  );
}

type WriteRequest = { PutRequest: { Item: Item } } | { DeleteRequest: { Key: ItemKey } };
const requestKey = (r: { PutRequest?: { Item?: { pk?: unknown; sk?: unknown } }; DeleteRequest?: { Key?: { pk?: unknown; sk?: unknown } } }): string => {
  const k = r.PutRequest?.Item ?? r.DeleteRequest?.Key;
  return `${String(k?.pk)}|${String(k?.sk)}`;
};

async function batchWrite(
  doc: DynamoDBDocumentClient,
  table: string,
  requests: readonly WriteRequest[],
  opts: RetryOptions,
  groupOf?: (i: number) => number,
): Promise<Set<number>> {
  const failed = new Set<number>();
  const attempts = opts.attempts ?? 8;
  const chunks = chunksOf(requests.length, 25, groupOf);
  await Promise.all(
    chunks.map(async (chunk) => {
      let pending = chunk;
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > 0) await opts.clock.sleep(delay(attempt - 1, opts));
        try {
          const out = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending.map((i) => requests[i] as WriteRequest) } }));
          const left = out.UnprocessedItems?.[table] ?? [];
          if (left.length === 0) return;
          // Unprocessed requests come back as they were sent: find them by key.
          const keys = new Set(left.map(requestKey));
          pending = pending.filter((i) => keys.has(requestKey(requests[i] as WriteRequest)));
        } catch (err) {
          if (isPermanent(err)) break;
        }
        if (attempt + 1 >= attempts) break;
      }
      for (const i of pending) failed.add(i);
    }),
  );
  return failed;
}

/**
 * Reads items by key, 100 per request, re-asking for unprocessed keys; answers them by keyString.
 * `attributes`: only these of each item (the key is always read). Throws when attempts run out.
 */
export async function batchGet(
  doc: DynamoDBDocumentClient,
  table: string,
  keys: readonly ItemKey[],
  opts: RetryOptions,
  attributes?: readonly string[],
  consistent = false,
): Promise<Map<string, Item>> {
  const found = new Map<string, Item>();
  const attempts = opts.attempts ?? 8;
  const names = attributes && ['pk', 'sk', ...attributes];
  const projection = names
    ? { ProjectionExpression: names.map((_, i) => `#p${i}`).join(', '), ExpressionAttributeNames: Object.fromEntries(names.map((a, i) => [`#p${i}`, a])) }
    : {};
  const chunks: ItemKey[][] = [];
  for (let i = 0; i < keys.length; i += 100) chunks.push(keys.slice(i, i + 100));
  await Promise.all(
    chunks.map(async (chunk) => {
      let pending = chunk;
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > 0) await opts.clock.sleep(delay(attempt - 1, opts));
        try {
          const out = await doc.send(
            new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ...projection, ...(consistent ? { ConsistentRead: true } : {}) } } }),
          );
          for (const item of out.Responses?.[table] ?? []) found.set(keyString(item), item);
          pending = (out.UnprocessedKeys?.[table]?.Keys ?? []) as ItemKey[];
        } catch (err) {
          if (isPermanent(err) || attempt + 1 >= attempts) throw err;
          continue;
        }
        if (pending.length > 0 && attempt + 1 >= attempts) throw new Error(`BatchGetItem left ${pending.length} key(s) unprocessed`);
      }
    }),
  );
  return found;
}
