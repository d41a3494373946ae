/**
 * The semantic cache's vectors: one item per vector in its partition (`VEC#`), newest first, and a
 * small marker per vector with the same sort key in a partition of its own (`VECIDX#`), so that a
 * trim reads a few bytes per entry instead of the kilobytes of every vector.
 */
import { BatchWriteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../ports/clock.ts';
import { Entity } from './entity.ts';
import { queryAll } from './paginate.ts';
import type { TableClient } from './repositories.ts';

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

export type VectorMarkerRecord = Omit<VectorEntryRecord, 'vector'>;

/** What names a vector's two items. */
type VectorKeyFields = 'partition' | 'created_at' | 'key';

// The partitions, named once for the declarations and the queries of a partition.
const vectorPk = (partition: string): string => `VEC#${partition}`;
const markerPk = (partition: string): string => `VECIDX#${partition}`;
const vectorSk = (r: { created_at: string; key: string }): string => `${r.created_at}#${r.key}`;
const ttlSeconds = (ms: number): number => Math.ceil(ms / 1000);

export const VectorEntry = new Entity<VectorEntryRecord, VectorKeyFields>({
  name: 'VectorEntry',
  key: (r) => ({ pk: vectorPk(r.partition), sk: vectorSk(r) }),
  ttl: (r) => ttlSeconds(r.expires_at_ms),
});

export const VectorMarker = new Entity<VectorMarkerRecord, VectorKeyFields>({
  name: 'VectorMarker',
  key: (r) => ({ pk: markerPk(r.partition), sk: vectorSk(r) }),
  ttl: (r) => ttlSeconds(r.expires_at_ms),
});

/** What a lookup reads of a vector (attributes as stored: the reader checks them). */
export type StoredVector = Pick<VectorEntryRecord, 'key' | 'vector' | 'expires_at_ms'>;
/** What a trim reads of a marker. */
export type StoredMarker = Pick<VectorMarkerRecord, 'key' | 'created_at' | 'expires_at_ms'>;

/** BatchWriteItem takes at most 25 requests. */
const BATCH = 25;
const DELETE_ATTEMPTS = 5;

export class VectorItems {
  readonly #t: TableClient;
  readonly #clock: Clock;
  constructor(t: TableClient, clock: Clock) {
    this.#t = t;
    this.#clock = clock;
  }

  /** The newest `max` vectors of a partition, expired ones included. */
  async newest(partition: string, max: number): Promise<StoredVector[]> {
    const items = await queryAll(
      this.#t.doc,
      {
        TableName: this.#t.tableName,
        KeyConditionExpression: 'pk = :p',
        ExpressionAttributeValues: { ':p': vectorPk(partition) },
        ExpressionAttributeNames: { '#k': 'key' },
        ProjectionExpression: '#k, vector, expires_at_ms',
        ScanIndexForward: false,
      },
      { max },
    );
    return items as StoredVector[];
  }

  /** Writes a vector and its marker. */
  async put(record: VectorEntryRecord): Promise<void> {
    const { vector: _vector, ...marker } = record;
    await Promise.all([
      this.#t.doc.send(new PutCommand({ TableName: this.#t.tableName, Item: VectorEntry.toItem(record) })),
      this.#t.doc.send(new PutCommand({ TableName: this.#t.tableName, Item: VectorMarker.toItem(marker) })),
    ]);
  }

  /** Every marker of a partition, newest first. */
  async markers(partition: string): Promise<StoredMarker[]> {
    const items = await queryAll(this.#t.doc, {
      TableName: this.#t.tableName,
      KeyConditionExpression: 'pk = :p',
      ExpressionAttributeValues: { ':p': markerPk(partition) },
      ExpressionAttributeNames: { '#k': 'key' },
      ProjectionExpression: 'created_at, #k, expires_at_ms',
      ScanIndexForward: false,
    });
    return items as StoredMarker[];
  }

  /** Deletes vectors and their markers; best effort once DynamoDB still leaves some unprocessed. */
  async delete(partition: string, doomed: readonly Pick<VectorMarkerRecord, 'created_at' | 'key'>[]): Promise<void> {
    const requests = doomed.flatMap((m) => [
      { DeleteRequest: { Key: VectorEntry.key({ partition, ...m }) } },
      { DeleteRequest: { Key: VectorMarker.key({ partition, ...m }) } },
    ]);
    for (let i = 0; i < requests.length; i += BATCH) await this.#batchDelete(requests.slice(i, i + BATCH));
  }

  /** Retries what DynamoDB leaves unprocessed under throttling. */
  async #batchDelete(requests: Record<string, unknown>[]): Promise<void> {
    let pending = requests;
    for (let attempt = 0; attempt < DELETE_ATTEMPTS && pending.length > 0; attempt++) {
      if (attempt > 0) await this.#clock.sleep(50 * 2 ** attempt);
      const out = await this.#t.doc.send(new BatchWriteCommand({ RequestItems: { [this.#t.tableName]: pending } }));
      pending = (out.UnprocessedItems?.[this.#t.tableName] ?? []) as Record<string, unknown>[];
    }
  }
}
