/**
 * Log ids (`x-gw-log-id`, the `id` of a log): UUIDs of version 7 (RFC 9562), whose first 48 bits
 * are the request's start in Unix milliseconds. The start is what places a log item (its day, its
 * sort key; the shard is a hash of the id), so with the workspace, which the caller of a lookup
 * knows, a log is read by id with no id pointer item (observability/log-store.ts). To users the id
 * stays an opaque UUID string. Ids of any other shape (the v4 UUIDs of earlier versions) do not
 * decode and are found through their pointer, which the ingest worker still writes for them.
 * Imported by the gateway's request path: node:crypto only.
 */
import { randomUUID } from 'node:crypto';

/** 2^48 - 1: the largest time a version 7 UUID holds. */
const MAX_MS = 0xffff_ffff_ffff;

/** A new log id for a request that started at `startedMs` (an integer, as clocks give). */
export function newLogId(startedMs: number): string {
  const hex = Math.min(Math.max(0, Math.trunc(startedMs)), MAX_MS)
    .toString(16)
    .padStart(12, '0');
  // randomUUID's 74 random bits and its variant, its version digit (index 14) replaced by 7.
  const random = randomUUID();
  return `${hex.slice(0, 8)}-${hex.slice(8)}-7${random.slice(15)}`;
}

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The start (Unix ms) a log id was made for, or undefined when the id is not one of ours (an older id). */
export function startOfLogId(id: string): number | undefined {
  if (id.length !== 36 || !V7.test(id)) return undefined;
  return Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}
