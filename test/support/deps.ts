/** Test dependencies on the run's DynamoDB Local: each call gets a fresh table of its own. */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { loadConfig } from '../../layers/core/src/config.ts';
import { createDeps, type CoreDeps, type DepsOverrides } from '../../layers/core/src/deps.ts';
import { localAdapters } from '../../layers/core/src/local-adapters.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { attachLocalWorkers } from '../../layers/core/src/local-adapters.ts';

export async function createTestDeps(env: Record<string, string> = {}, overrides: DepsOverrides = {}): Promise<CoreDeps> {
  const endpoint = inject('dynamodbEndpoint');
  const tableName = `t-${randomUUID()}`;
  const client = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  await ensureTable(client, tableName);
  client.destroy();
  return createTestDepsOn(tableName, env, overrides);
}

/**
 * Dependencies on an existing table: each call is another instance of the service (its own caches,
 * queues and HTTP clients) sharing the table, as Lambda instances share it.
 */
export function createTestDepsOn(tableName: string, env: Record<string, string> = {}, overrides: DepsOverrides = {}): CoreDeps {
  const endpoint = inject('dynamodbEndpoint');
  const config = loadConfig({
    TABLE_NAME: tableName,
    DYNAMODB_ENDPOINT: endpoint,
    AWS_REGION: 'local',
    GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1,localhost',
    // Each call its own outbox and blobs: tests never read one another's mail or bodies.
    GW_OUTBOX_DIR: mkdtempSync(path.join(os.tmpdir(), 'gantry-outbox-')),
    GW_BLOB_DIR: mkdtempSync(path.join(os.tmpdir(), 'gantry-blobs-')),
    LOG_LEVEL: 'SILENT',
    ...env,
  });
  const deps = createDeps(config, { ...localAdapters(config, overrides.clock), ...overrides });
  // The log-ingest and log-export workers run in-process, as with `npm start`.
  attachLocalWorkers(deps);
  return deps;
}
