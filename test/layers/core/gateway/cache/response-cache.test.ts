import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
/** ResponseCache on DynamoDB Local with a manual clock, large bodies in a file blob store. */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { ResponseCache, type CacheEntryInput } from '../../../../../layers/core/src/gateway/cache/response-cache.ts';
import { FsBlobStore } from '../../../../../layers/core/src/ports/local/blob-fs.ts';
import { ManualClock } from '../../../../../layers/core/src/ports/clock.ts';
import { ensureTable } from '../../../../../layers/core/src/store/create-table.ts';
import { createDocumentClient } from '../../../../../layers/core/src/store/db.ts';
import { TableClient } from '../../../../../layers/core/src/store/repositories.ts';
import { TABLE } from '../../../../../layers/core/src/store/table.ts';

const INLINE_MAX = 1000;

/** A fresh table on the run's DynamoDB Local; only the table is needed, not the whole of CoreDeps. */
async function freshTable(): Promise<TableClient> {
  const endpoint = inject('dynamodbEndpoint');
  const tableName = `t-${randomUUID()}`;
  const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await ensureTable(client, tableName);
  client.destroy();
  return new TableClient(createDocumentClient({ region: 'local', endpoint }), tableName);
}

let table: TableClient;
let dir: string;
let blobs: FsBlobStore;
let clock: ManualClock;
let cache: ResponseCache;

beforeAll(async () => {
  table = await freshTable();
  dir = await mkdtemp(join(tmpdir(), 'gantry-cache-'));
  blobs = new FsBlobStore(dir);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  clock = new ManualClock();
  // The memory layer is off here so that every read exercises the table and the blobs.
  cache = new ResponseCache(table, blobs, clock, { inlineMaxBytes: INLINE_MAX, memoryEntries: 0 });
});

const text = (s: string) => new TextEncoder().encode(s);
const key = () => randomUUID().replaceAll('-', '');

const jsonEntry = (content: string): CacheEntryInput => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: text(JSON.stringify({ id: 'chatcmpl-1', choices: [{ message: { role: 'assistant', content } }] })),
  streamed: false,
});

const rawItem = async (k: string) => (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: `CACHE#${k}`, sk: 'CACHE' } }))).Item;

describe('ResponseCache', () => {
  it('misses a key never stored', async () => {
    expect(await cache.get(key())).toBeUndefined();
  });

  it('hits with status, headers, body and times', async () => {
    const k = key();
    const entry = jsonEntry('hello');
    await cache.put(k, entry, 60);
    const start = clock.now();
    clock.advance(5_000);
    expect(await cache.get(k)).toEqual({ ...entry, createdAt: start, expiresAt: start + 60_000 });
  });

  it('stores the item with its key layout, a TTL in Unix seconds and the body inline', async () => {
    const k = key();
    await cache.put(k, jsonEntry('x'), 120);
    const item = await rawItem(k);
    expect(item).toMatchObject({
      pk: `CACHE#${k}`,
      sk: 'CACHE',
      _type: 'CacheEntry',
      status: 200,
      streamed: false,
      created_at: new Date(clock.now()).toISOString(),
      expires_at: clock.now() / 1000 + 120,
      [TABLE.ttlAttribute]: clock.now() / 1000 + 120,
    });
    expect(item?.body).toBeInstanceOf(Uint8Array);
    expect(item?.blob_key).toBeUndefined();
  });

  it('keeps streamed responses as their raw SSE bytes', async () => {
    const k = key();
    const sse = text('data: {"choices":[{"delta":{"content":"Hi"}}]}\n\ndata: [DONE]\n\n');
    await cache.put(k, { status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse, streamed: true }, 60);
    const hit = await cache.get(k);
    expect(hit?.streamed).toBe(true);
    expect(new TextDecoder().decode(hit?.body)).toBe(new TextDecoder().decode(sse));
  });

  it('serves an empty body', async () => {
    const k = key();
    await cache.put(k, { status: 204, headers: {}, body: new Uint8Array(0), streamed: false }, 60);
    expect(await cache.get(k)).toMatchObject({ status: 204, headers: {}, body: new Uint8Array(0) });
  });

  it('stops serving at max_age, while the item is still in the table', async () => {
    const k = key();
    await cache.put(k, jsonEntry('old'), 10);
    clock.advance(9_999);
    expect(await cache.get(k)).toBeDefined();
    clock.advance(1);
    expect(await cache.get(k)).toBeUndefined();
    expect(await rawItem(k)).toBeDefined();
  });

  it('stores nothing for a max_age of 0', async () => {
    const k = key();
    await cache.put(k, jsonEntry('never'), 0);
    expect(await rawItem(k)).toBeUndefined();
  });

  it('puts a body above inlineMaxBytes in blob storage under cache/<key>', async () => {
    const k = key();
    const big = new Uint8Array(INLINE_MAX + 1).map((_, i) => i % 251);
    await cache.put(k, { status: 200, headers: { 'content-type': 'application/json' }, body: big, streamed: false }, 60);
    const item = await rawItem(k);
    expect(item?.blob_key).toBe(`cache/${k}`);
    expect(item?.body).toBeUndefined();
    expect(await blobs.get(`cache/${k}`)).toEqual(big);
    expect((await cache.get(k))?.body).toEqual(big);
  });

  it('keeps a body of exactly inlineMaxBytes inline', async () => {
    const k = key();
    await cache.put(k, { status: 200, headers: {}, body: new Uint8Array(INLINE_MAX), streamed: false }, 60);
    expect((await rawItem(k))?.blob_key).toBeUndefined();
  });

  it('serves hot entries from memory, still honouring their expiry', async () => {
    const withMemory = new ResponseCache(table, blobs, clock, { inlineMaxBytes: INLINE_MAX, memoryEntries: 2 });
    const k = key();
    await withMemory.put(k, jsonEntry('hot'), 10);
    // Gone from the table, still in memory: served without a read.
    await table.doc.send(new DeleteCommand({ TableName: table.tableName, Key: { pk: `CACHE#${k}`, sk: 'CACHE' } }));
    expect((await withMemory.get(k))?.body).toEqual(jsonEntry('hot').body);
    clock.advance(10_000);
    expect(await withMemory.get(k)).toBeUndefined();
  });

  it('keeps only the most recently used entries in memory', async () => {
    const withMemory = new ResponseCache(table, blobs, clock, { inlineMaxBytes: INLINE_MAX, memoryEntries: 1 });
    const [k1, k2] = [key(), key()];
    await withMemory.put(k1, jsonEntry('one'), 60);
    await withMemory.put(k2, jsonEntry('two'), 60);
    await table.doc.send(new DeleteCommand({ TableName: table.tableName, Key: { pk: `CACHE#${k1}`, sk: 'CACHE' } }));
    // k1 was pushed out of memory by k2 and is gone from the table.
    expect(await withMemory.get(k1)).toBeUndefined();
    expect(await withMemory.get(k2)).toBeDefined();
  });

  it('misses when the blob is gone', async () => {
    const k = key();
    await cache.put(k, { status: 200, headers: {}, body: new Uint8Array(INLINE_MAX * 2), streamed: false }, 60);
    await blobs.delete(`cache/${k}`);
    expect(await cache.get(k)).toBeUndefined();
  });

  it('overwrites on refresh with the new body and a new expiry', async () => {
    const k = key();
    await cache.put(k, jsonEntry('first'), 10);
    clock.advance(8_000);
    const refreshedAt = clock.now();
    await cache.put(k, jsonEntry('second'), 10);
    clock.advance(8_000);
    expect(await cache.get(k)).toEqual({ ...jsonEntry('second'), createdAt: refreshedAt, expiresAt: refreshedAt + 10_000 });
  });

  it('switches between blob and inline on refresh, removing the unused blob', async () => {
    const k = key();
    const big = new Uint8Array(INLINE_MAX * 3).fill(7);
    await cache.put(k, { status: 200, headers: {}, body: big, streamed: false }, 60);
    await cache.put(k, jsonEntry('small'), 60);
    expect(await cache.get(k)).toMatchObject({ body: jsonEntry('small').body });
    expect(await blobs.get(`cache/${k}`)).toBeUndefined();
    await cache.put(k, { status: 200, headers: {}, body: big, streamed: false }, 60);
    expect((await cache.get(k))?.body).toEqual(big);
  });
});
