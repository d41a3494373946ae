/** Table entities of the response cache and the semantic vector index (key layout: docs/design/design.md#storage). */
import { Entity } from '../../store/entity.ts';

export interface CacheEntryRecord {
  /** The cache key (hex SHA-256, see key.ts). */
  key: string;
  status: number;
  headers: Record<string, string>;
  /** The body when it fits in the item; otherwise `blob_key` names it in blob storage. */
  body?: Uint8Array;
  blob_key?: string;
  /** True when the body is the raw SSE bytes of a streamed response. */
  streamed: boolean;
  /** ISO 8601. */
  created_at: string;
  /** Unix seconds after which the entry is never served; also the item's TTL. */
  expires_at: number;
}

export const CacheEntry = new Entity<CacheEntryRecord>({
  name: 'CacheEntry',
  key: (r) => ({ pk: `CACHE#${r.key}`, sk: 'CACHE' }),
  ttl: (r) => r.expires_at,
});

export interface VectorEntryRecord {
  partition: string;
  /** The cache key the vector stands for. */
  key: string;
  /** Float32 values, little-endian (the platform order of every Lambda and local machine). */
  vector: Uint8Array;
  /** ISO 8601; the sort key starts with it, so a partition reads newest first. */
  created_at: string;
  /** Unix milliseconds after which the entry is skipped. */
  expires_at_ms: number;
}

const vectorSk = (r: { created_at: string; key: string }): string => `${r.created_at}#${r.key}`;
const ttlSeconds = (ms: number): number => Math.ceil(ms / 1000);

export const VectorEntry = new Entity<VectorEntryRecord>({
  name: 'VectorEntry',
  key: (r) => ({ pk: `VEC#${r.partition}`, sk: vectorSk(r) }),
  ttl: (r) => ttlSeconds(r.expires_at_ms),
});

/**
 * A small marker per vector, same sort key, in a partition of its own: trimming a partition reads
 * these few bytes per entry instead of the kilobytes of every vector.
 */
export type VectorMarkerRecord = Omit<VectorEntryRecord, 'vector'>;

export const VectorMarker = new Entity<VectorMarkerRecord>({
  name: 'VectorMarker',
  key: (r) => ({ pk: `VECIDX#${r.partition}`, sk: vectorSk(r) }),
  ttl: (r) => ttlSeconds(r.expires_at_ms),
});
