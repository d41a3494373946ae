/** The response cache's items: one per cache key, with a TTL (key layout: docs/design/design.md#storage). */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { Entity } from './entity.ts';
import type { TableClient } from './repositories.ts';

export interface CacheEntryRecord {
  /** The cache key (hex SHA-256, see gateway/cache/key.ts). */
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

export const CacheEntry = new Entity<CacheEntryRecord, 'key'>({
  name: 'CacheEntry',
  key: (r) => ({ pk: `CACHE#${r.key}`, sk: 'CACHE' }),
  ttl: (r) => r.expires_at,
});

export class CacheEntryStore {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  /** The stored entry, expired or not (DynamoDB deletes late: the reader checks `expires_at`). */
  get(key: string): Promise<CacheEntryRecord | undefined> {
    return this.#t.get(CacheEntry, CacheEntry.key({ key }));
  }

  /** Stores (or replaces) the entry; answers the blob the replaced entry named, if any. */
  async put(record: CacheEntryRecord): Promise<string | undefined> {
    const out = await this.#t.doc.send(new PutCommand({ TableName: this.#t.tableName, Item: CacheEntry.toItem(record), ReturnValues: 'ALL_OLD' }));
    const old = out.Attributes?.blob_key;
    return typeof old === 'string' ? old : undefined;
  }
}
