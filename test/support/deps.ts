/** Test dependencies on the run's DynamoDB Local: each call gets a fresh table of its own. */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { loadConfig } from '../../layers/core/src/config.ts';
import { createDeps, type CoreDeps, type DepsOverrides } from '../../layers/core/src/deps.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';

export async function createTestDeps(
  env: Record<string, string> = {},
  overrides: DepsOverrides = {},
): Promise<CoreDeps> {
  const endpoint = inject('dynamodbEndpoint');
  const tableName = `t-${randomUUID()}`;
  const client = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  await ensureTable(client, tableName);
  client.destroy();
  return createDeps(
    loadConfig({
      TABLE_NAME: tableName,
      DYNAMODB_ENDPOINT: endpoint,
      AWS_REGION: 'local',
      GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1,localhost',
      LOG_LEVEL: 'SILENT',
      ...env,
    }),
    overrides,
  );
}
