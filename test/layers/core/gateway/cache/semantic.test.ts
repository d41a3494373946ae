/**
 * Semantic cache pieces: the similarity math and what is embedded (unit), and DynamoVectorIndex on
 * DynamoDB Local (partitions, threshold, expiry, bounded partitions).
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { DynamoVectorIndex, cosine, paramsHash, semanticPartition, semanticText } from '../../../../../layers/core/src/gateway/cache/semantic.ts';
import { ManualClock } from '../../../../../layers/core/src/ports/clock.ts';
import { ensureTable } from '../../../../../layers/core/src/store/create-table.ts';
import { createDocumentClient } from '../../../../../layers/core/src/store/db.ts';
import { TableClient } from '../../../../../layers/core/src/store/repositories.ts';

const f32 = (...v: number[]) => new Float32Array(v);

describe('cosine', () => {
  it('is 1 for the same direction, whatever the length', () => {
    expect(cosine(f32(1, 2, 3), f32(2, 4, 6))).toBeCloseTo(1, 6);
  });

  it('is 0 for orthogonal and -1 for opposite vectors', () => {
    expect(cosine(f32(1, 0), f32(0, 5))).toBe(0);
    expect(cosine(f32(1, -2), f32(-1, 2))).toBeCloseTo(-1, 6);
  });

  it('matches the definition', () => {
    // (1*4 + 2*5 + 3*6) / (sqrt(14) * sqrt(77))
    expect(cosine(f32(1, 2, 3), f32(4, 5, 6))).toBeCloseTo(32 / Math.sqrt(14 * 77), 6);
  });

  it('is 0 against a zero vector', () => {
    expect(cosine(f32(0, 0), f32(1, 1))).toBe(0);
  });

  it('refuses vectors of different lengths', () => {
    expect(() => cosine(f32(1), f32(1, 2))).toThrow(RangeError);
  });
});

describe('semanticText', () => {
  it('takes the system prompts and the last user turn only', () => {
    const text = semanticText([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'What is 2+2?' },
      { role: 'assistant', content: '4' },
      { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
      { role: 'user', content: 'And 3+3?' },
    ]);
    expect(text).toBe('system: You are terse.\nsystem: Answer in French.\nuser: And 3+3?');
  });

  it('joins the text parts of the user turn', () => {
    expect(
      semanticText([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'first' },
            { type: 'text', text: 'second' },
          ],
        },
      ]),
    ).toBe('user: first\nsecond');
  });

  it('works without a system prompt, and skips empty ones', () => {
    expect(
      semanticText([
        { role: 'system', content: ' ' },
        { role: 'user', content: 'hi' },
      ]),
    ).toBe('user: hi');
  });

  it('declines when the conversation does not end on a user turn', () => {
    expect(
      semanticText([
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'w', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 't', content: 'sunny' },
      ]),
    ).toBeUndefined();
    expect(semanticText([])).toBeUndefined();
  });

  it('declines when the user turn holds non-text parts or no text', () => {
    expect(
      semanticText([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          ],
        },
      ]),
    ).toBeUndefined();
    expect(semanticText([{ role: 'user', content: '  ' }])).toBeUndefined();
  });
});

describe('paramsHash and semanticPartition', () => {
  const body = { model: 'gpt-4o', temperature: 0.2, max_tokens: 100, messages: [{ role: 'user', content: 'a' }] };
  const part = { workspaceId: 'ws-1', endpoint: 'chat/completions', model: 'gpt-4o', paramsHash: paramsHash(body) };

  it('ignores the messages and key order, not the other parameters', () => {
    expect(paramsHash({ ...body, messages: [{ role: 'user', content: 'b' }] })).toBe(paramsHash(body));
    expect(paramsHash({ messages: [], max_tokens: 100, temperature: 0.2, model: 'gpt-4o' })).toBe(paramsHash(body));
    expect(paramsHash({ ...body, temperature: 0.3 })).not.toBe(paramsHash(body));
    expect(paramsHash({ ...body, stream: true })).not.toBe(paramsHash(body));
  });

  it('puts the same model and parameters in the same partition, under the workspace', () => {
    expect(semanticPartition({ ...part })).toBe(semanticPartition(part));
    expect(semanticPartition(part)).toMatch(/^ws-1#[0-9a-f]{64}$/);
    expect(semanticPartition({ ...part, namespace: '' })).toBe(semanticPartition(part));
  });

  it('separates workspaces, namespaces, endpoints, models, parameters and embedders', () => {
    const all = new Set([
      semanticPartition(part),
      semanticPartition({ ...part, workspaceId: 'ws-2' }),
      semanticPartition({ ...part, namespace: 'n' }),
      semanticPartition({ ...part, endpoint: 'completions' }),
      semanticPartition({ ...part, model: 'gpt-4o-mini' }),
      semanticPartition({ ...part, paramsHash: paramsHash({ ...body, temperature: 1 }) }),
      semanticPartition({ ...part, embedder: 'openai/text-embedding-3-small' }),
    ]);
    expect(all.size).toBe(7);
  });
});

/** A fresh table on the run's DynamoDB Local; only the table is needed, not the whole of CoreDeps. */
async function freshTable(): Promise<TableClient> {
  const endpoint = inject('dynamodbEndpoint');
  const tableName = `t-${randomUUID()}`;
  const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await ensureTable(client, tableName);
  client.destroy();
  return new TableClient(createDocumentClient({ region: 'local', endpoint }), tableName);
}

/** A deterministic pseudo-random unit-ish vector. */
function vec(seed: number, dims = 64): Float32Array {
  const v = new Float32Array(dims);
  let s = seed;
  for (let i = 0; i < dims; i++) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    v[i] = s / 2 ** 31 - 0.5;
  }
  return v;
}

/** `v` moved by `amount` along a fixed other direction. */
function nudge(v: Float32Array, amount: number, seed = 999): Float32Array {
  const d = vec(seed, v.length);
  return v.map((x, i) => x + amount * (d[i] as number));
}

/** A vector orthogonal to `v` (Gram-Schmidt against another). */
function orthogonal(v: Float32Array): Float32Array {
  const w = vec(4242, v.length);
  let dot = 0;
  let norm = 0;
  for (let i = 0; i < v.length; i++) {
    dot += (v[i] as number) * (w[i] as number);
    norm += (v[i] as number) ** 2;
  }
  return w.map((x, i) => x - (dot / norm) * (v[i] as number));
}

describe('DynamoVectorIndex', () => {
  let table: TableClient;
  let clock: ManualClock;
  let index: DynamoVectorIndex;
  const HOUR = 3_600_000;

  beforeAll(async () => {
    table = await freshTable();
  });

  beforeEach(() => {
    clock = new ManualClock();
    index = new DynamoVectorIndex(table, clock, { maxEntries: 12 });
  });

  const partition = () => `ws-${randomUUID()}#p`;

  const itemsOf = async (pk: string) =>
    (await table.doc.send(new QueryCommand({ TableName: table.tableName, KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': pk } })))
      .Items ?? [];

  it('finds a near-duplicate above 0.95 and misses an orthogonal vector', async () => {
    const p = partition();
    const v = vec(1);
    await index.upsert(p, 'key-1', v, clock.now() + HOUR);
    const near = nudge(v, 0.05);
    expect(cosine(v, near)).toBeGreaterThan(0.95);
    const hit = await index.query(p, near, 0.95, clock.now());
    expect(hit?.key).toBe('key-1');
    expect(hit?.score).toBeCloseTo(cosine(v, near), 5);
    const ortho = orthogonal(v);
    expect(Math.abs(cosine(v, ortho))).toBeLessThan(1e-5);
    expect(await index.query(p, ortho, 0.95, clock.now())).toBeUndefined();
  });

  it('misses a vector that is similar but below the threshold', async () => {
    const p = partition();
    const v = vec(2);
    await index.upsert(p, 'key-1', v, clock.now() + HOUR);
    const loose = nudge(v, 0.6);
    const score = cosine(v, loose);
    expect(score).toBeLessThan(0.95);
    expect(score).toBeGreaterThan(0.5);
    expect(await index.query(p, loose, 0.95, clock.now())).toBeUndefined();
    expect((await index.query(p, loose, 0.5, clock.now()))?.key).toBe('key-1');
  });

  it('returns the best of several matches, and the exact vector scores 1', async () => {
    const p = partition();
    const v = vec(3);
    await index.upsert(p, 'far', nudge(v, 0.1, 7), clock.now() + HOUR);
    clock.advance(1);
    await index.upsert(p, 'exact', v, clock.now() + HOUR);
    clock.advance(1);
    await index.upsert(p, 'near', nudge(v, 0.02, 8), clock.now() + HOUR);
    const hit = await index.query(p, v, 0.95, clock.now());
    expect(hit?.key).toBe('exact');
    expect(hit?.score).toBeCloseTo(1, 6);
  });

  it('keeps partitions apart', async () => {
    const a = partition();
    const b = partition();
    const v = vec(4);
    await index.upsert(a, 'in-a', v, clock.now() + HOUR);
    expect(await index.query(b, v, 0.5, clock.now())).toBeUndefined();
    expect((await index.query(a, v, 0.5, clock.now()))?.key).toBe('in-a');
  });

  it('skips expired entries, while DynamoDB still holds them', async () => {
    const p = partition();
    const v = vec(5);
    const expiresAt = clock.now() + 10_000;
    await index.upsert(p, 'short', v, expiresAt);
    expect((await index.query(p, v, 0.95, expiresAt - 1))?.key).toBe('short');
    expect(await index.query(p, v, 0.95, expiresAt)).toBeUndefined();
    expect(await itemsOf(`VEC#${p}`)).toHaveLength(1);
  });

  it('stores the vector as binary Float32 with its key layout and a TTL', async () => {
    const p = partition();
    const v = vec(6, 8);
    await index.upsert(p, 'k', v, clock.now() + HOUR);
    const [item] = await itemsOf(`VEC#${p}`);
    expect(item).toMatchObject({
      sk: `${new Date(clock.now()).toISOString()}#k`,
      key: 'k',
      ttl: (clock.now() + HOUR) / 1000,
    });
    expect(item?.vector).toBeInstanceOf(Uint8Array);
    expect((item?.vector as Uint8Array).byteLength).toBe(32);
    expect(new Float32Array((item?.vector as Uint8Array).slice().buffer)).toEqual(v);
  });

  it('ignores stored vectors of another length', async () => {
    const p = partition();
    await index.upsert(p, 'short', vec(7, 8), clock.now() + HOUR);
    expect(await index.query(p, vec(7, 16), 0, clock.now())).toBeUndefined();
  });

  it('keeps one entry per key: a repeated upsert replaces the older one', async () => {
    const p = partition();
    await index.upsert(p, 'same', vec(8), clock.now() + HOUR);
    clock.advance(1_000);
    await index.upsert(p, 'same', vec(9), clock.now() + HOUR);
    expect(await itemsOf(`VEC#${p}`)).toHaveLength(1);
    expect((await index.query(p, vec(9), 0.99, clock.now()))?.key).toBe('same');
  });

  it('trims a partition to maxEntries, keeping the newest', async () => {
    const p = partition();
    for (let i = 0; i < index.maxEntries + 5; i++) {
      await index.upsert(p, `k${i}`, vec(100 + i), clock.now() + HOUR);
      clock.advance(1);
    }
    const items = await itemsOf(`VEC#${p}`);
    expect(items).toHaveLength(index.maxEntries);
    expect(items.map((it) => it.key).sort()).toEqual(Array.from({ length: index.maxEntries }, (_, i) => `k${i + 5}`).sort());
    expect(await itemsOf(`VECIDX#${p}`)).toHaveLength(index.maxEntries);
    expect(await index.query(p, vec(100), 0.99, clock.now())).toBeUndefined();
    expect((await index.query(p, vec(105), 0.99, clock.now()))?.key).toBe('k5');
  });

  it('reads no more than maxEntries of a partition, newest first', async () => {
    const p = partition();
    const roomy = new DynamoVectorIndex(table, clock, { maxEntries: 20 });
    for (let i = 0; i < 20; i++) {
      await roomy.upsert(p, `k${i}`, vec(200 + i), clock.now() + HOUR);
      clock.advance(1);
    }
    const narrow = new DynamoVectorIndex(table, clock, { maxEntries: 5 });
    expect(await narrow.query(p, vec(214), 0.99, clock.now())).toBeUndefined();
    expect((await narrow.query(p, vec(215), 0.99, clock.now()))?.key).toBe('k15');
    expect((await roomy.query(p, vec(200), 0.99, clock.now()))?.key).toBe('k0');
  });

  it('drops expired entries when trimming', async () => {
    const p = partition();
    await index.upsert(p, 'old', vec(10), clock.now() + 1_000);
    clock.advance(2_000);
    await index.upsert(p, 'new', vec(11), clock.now() + HOUR);
    expect((await itemsOf(`VEC#${p}`)).map((it) => it.key)).toEqual(['new']);
  });

  it('defaults to a bound of 200 entries', async () => {
    expect(new DynamoVectorIndex(table, clock).maxEntries).toBe(200);
  });
});
