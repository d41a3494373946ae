/**
 * Writes that must not be lost: BatchWriteItem and BatchGetItem re-send what DynamoDB left
 * unprocessed, and single calls are retried, with exponential backoff and jitter (through the
 * clock, so tests do not wait). The log-ingest worker writes and reads its items through these.
 */
import { BatchGetCommand, BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
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

/**
 * Puts every item, `perRequest` (at most 25, the default) per request, re-sending unprocessed ones
 * and retrying failed requests. Returns the indexes of the items that could not be written after
 * every attempt.
 */
export async function batchPut(doc: DynamoDBDocumentClient, table: string, items: readonly Item[], opts: RetryOptions, perRequest = 25): Promise<Set<number>> {
  const failed = new Set<number>();
  const attempts = opts.attempts ?? 8;
  const size = Math.min(Math.max(1, perRequest), 25);
  const chunks: number[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size).map((_, j) => i + j));
  await Promise.all(
    chunks.map(async (chunk) => {
      let pending = chunk;
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > 0) await opts.clock.sleep(delay(attempt - 1, opts));
        try {
          const out = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending.map((i) => ({ PutRequest: { Item: items[i] as Item } })) } }));
          const left = out.UnprocessedItems?.[table] ?? [];
          if (left.length === 0) return;
          // Unprocessed items come back as they were sent: find them by key.
          const keys = new Set(left.map((r) => `${String(r.PutRequest?.Item?.pk)}|${String(r.PutRequest?.Item?.sk)}`));
          pending = pending.filter((i) => keys.has(`${String(items[i]?.pk)}|${String(items[i]?.sk)}`));
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

/** Reads items by key, 100 per request, re-asking for unprocessed keys. Throws when attempts run out. */
export async function batchGet(doc: DynamoDBDocumentClient, table: string, keys: readonly ItemKey[], opts: RetryOptions): Promise<Map<string, Item>> {
  const found = new Map<string, Item>();
  const attempts = opts.attempts ?? 8;
  for (let i = 0; i < keys.length; i += 100) {
    let pending: ItemKey[] = keys.slice(i, i + 100);
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await opts.clock.sleep(delay(attempt - 1, opts));
      try {
        const out = await doc.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: pending } } }));
        for (const item of out.Responses?.[table] ?? []) found.set(String(item.pk), item);
        pending = (out.UnprocessedKeys?.[table]?.Keys ?? []) as ItemKey[];
      } catch (err) {
        if (isPermanent(err) || attempt + 1 >= attempts) throw err;
        continue;
      }
      if (pending.length > 0 && attempt + 1 >= attempts) throw new Error(`BatchGetItem left ${pending.length} key(s) unprocessed`);
    }
  }
  return found;
}
