/**
 * The bulk loader of `npm run seed:large` writes DynamoDB Local's own rows: the same items put through
 * DynamoDB Local's API and through the loader give the same row, column by column, and DynamoDB Local
 * reads loaded items back through Query, GetItem and the secondary index.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { startDynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { ApiKey, ApiKeyByHash } from '../../layers/core/src/store/entities.ts';
import { newKeyRecord } from '../../layers/core/src/admin/api-keys/service.ts';
import { LogStore } from '../../layers/core/src/observability/log-store.ts';
import { RollupStore } from '../../layers/core/src/observability/rollups.ts';
import { systemClock } from '../../layers/core/src/ports/clock.ts';
import { syntheticEvents } from '../support/observability.ts';
import { BulkTable, SHARED_DB_FILE, normaliseNumber, numberSize, rowOf, type IndexColumns } from './ddb-local-store.ts';

const TABLE = 'gantry';

function sampleItems(): Record<string, unknown>[] {
  const { record } = newKeyRecord(
    {
      organisation_id: 'org_1',
      workspace_id: 'ws_1',
      user_id: null,
      type: 'workspace-service',
      name: 'seeded',
      description: null,
      scopes: ['completions.write'],
      expires_at: null,
      owner: false,
      created_by: null,
    },
    Date.UTC(2026, 0, 1),
  );
  // Only the item builders are used: no request is sent.
  const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'local' }));
  const store = new LogStore({ doc, tableName: TABLE, clock: systemClock, logRetentionDays: 30, rollups: new RollupStore(doc, TABLE, 365) });
  const [event] = syntheticEvents(1, { start: Date.UTC(2026, 10, 20), spanMs: 3_600_000, workspaceId: 'ws_1', organisationId: 'org_1', seed: 7 });
  if (!event) throw new Error('no synthetic event');
  return [
    ApiKey.toItem(record),
    ApiKeyByHash.toItem(record),
    store.itemOf(event),
    store.pointerOf(event),
    {
      pk: 'ODD#é🙂',
      sk: 'x\u0000y',
      gsi1pk: 'only the index hash key',
      numbers: [0, 5, 10, 1234, -3, 1.5, 0.001, 1e-7, 1795569352301, 2 ** 53 - 1],
      nested: { a: { b: [true, null, 'ü', { c: 1 }] }, empty: {}, list: [] },
      bytes: new Uint8Array([0, 1, 254, 255]),
      tags: new Set(['bb', 'é', 'a']),
      small: 1e-7,
      counts: new Set([3, 1.25]),
      text: 'line\n"quoted" \\ tab\t 🙂',
    },
  ];
}

const rowsOf = (file: string) => {
  const db = new DatabaseSync(file, { readOnly: true });
  const rows = db.prepare(`SELECT * FROM "${TABLE}" ORDER BY hashKey, rangeKey`).all() as Record<string, unknown>[];
  db.close();
  return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v instanceof Uint8Array ? Buffer.from(v) : v])));
};

describe('bulk loading into DynamoDB Local', () => {
  let dir: string;
  let columns: IndexColumns;
  let stored: Record<string, unknown>[];
  const items = sampleItems();

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gw-bulk-'));
    const ddb = await startDynamoDBLocal({ dataDir: dir });
    const client = new DynamoDBClient({ endpoint: ddb.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false } });
    try {
      await ensureTable(client, TABLE);
      for (const Item of items) await doc.send(new PutCommand({ TableName: TABLE, Item }));
    } finally {
      client.destroy();
      await ddb.stop();
    }
    stored = rowsOf(path.join(dir, SHARED_DB_FILE));
    const bulk = new BulkTable(dir, TABLE);
    columns = bulk.columns;
    bulk.close();
  }, 60_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('normalises and sizes numbers as DynamoDB Local does', () => {
    expect(['5.00', '1e3', '0.000100', '-0.50', '007', '0.0'].map(normaliseNumber)).toEqual(['5', '1000', '0.0001', '-0.5', '7', '0']);
    // Sizes read off DynamoDB Local for these numbers.
    expect(['0', '5', '10', '123', '1234', '-3', '1.5', '0.001', '0.000123', '3.14159', '1795569352301', '100000000'].map(numberSize)).toEqual([
      1, 2, 2, 3, 3, 3, 3, 2, 3, 5, 8, 2,
    ]);
  });

  it('writes the row DynamoDB Local writes for the same item, column by column', () => {
    expect(stored).toHaveLength(items.length);
    const byKey = new Map(stored.map((r) => [`${r.hashKey}|${r.rangeKey}`, r]));
    for (const item of items) {
      const mine = rowOf(item, columns);
      const theirs = byKey.get(`${mine.hashKey}|${mine.rangeKey}`);
      expect(theirs, `row for ${String(item.pk)}`).toBeDefined();
      const { ObjectJSON: a, ...restMine } = mine;
      const { ObjectJSON: b, ...restTheirs } = theirs as Record<string, unknown>;
      expect(restMine).toEqual(restTheirs);
      // Attribute order differs (Java's map order); the content may not.
      expect(JSON.parse(a.toString('utf8'))).toEqual(JSON.parse((b as Buffer).toString('utf8')));
    }
  });

  it('refuses an item without its key, naming it', () => {
    expect(() => rowOf({ pk: 'p' }, columns)).toThrow(/without its key/);
  });

  it('DynamoDB Local reads loaded items through GetItem, Query and the index', async () => {
    const bulk = new BulkTable(dir, TABLE);
    bulk.write(
      Array.from({ length: 500 }, (_, i) => ({
        pk: 'BULK',
        sk: `item#${String(i).padStart(4, '0')}`,
        gsi1pk: `G#${i % 5}`,
        gsi1sk: `s#${i}`,
        n: i,
        name: `é ${i}`,
      })),
    );
    bulk.close();
    const ddb = await startDynamoDBLocal({ dataDir: dir });
    const client = new DynamoDBClient({ endpoint: ddb.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const doc = DynamoDBDocumentClient.from(client);
    try {
      const got = await doc.send(new GetCommand({ TableName: TABLE, Key: { pk: 'BULK', sk: 'item#0042' } }));
      expect(got.Item).toEqual({ pk: 'BULK', sk: 'item#0042', gsi1pk: 'G#2', gsi1sk: 's#42', n: 42, name: 'é 42' });
      const range = await doc.send(
        new QueryCommand({
          TableName: TABLE,
          KeyConditionExpression: 'pk = :p AND sk BETWEEN :a AND :b',
          ExpressionAttributeValues: { ':p': 'BULK', ':a': 'item#0100', ':b': 'item#0199' },
          ScanIndexForward: false,
          Limit: 3,
        }),
      );
      expect(range.Items?.map((i) => i.sk)).toEqual(['item#0199', 'item#0198', 'item#0197']);
      const index = await doc.send(
        new QueryCommand({ TableName: TABLE, IndexName: 'gsi1', KeyConditionExpression: 'gsi1pk = :p', ExpressionAttributeValues: { ':p': 'G#3' } }),
      );
      expect(index.Count).toBe(100);
      const original = await doc.send(new GetCommand({ TableName: TABLE, Key: { pk: items[0]?.pk, sk: items[0]?.sk } }));
      expect(original.Item?.name).toBe('seeded');
    } finally {
      client.destroy();
      await ddb.stop();
    }
  }, 60_000);
});
