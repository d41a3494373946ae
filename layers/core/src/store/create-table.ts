/**
 * Creates the table from the TABLE declaration (local runtime and tests; the CDK data stack builds
 * the same declaration in AWS). Idempotent: an existing table is left as it is.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { TABLE, keyAttributes, type TableDeclaration } from './table.ts';

export async function ensureTable(client: DynamoDBClient, tableName: string, decl: TableDeclaration = TABLE): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (err) {
    if (!(err instanceof Error) || err.name !== 'ResourceNotFoundException') throw err;
  }
  let createdHere = true;
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: keyAttributes(decl).map((a) => ({ AttributeName: a.name, AttributeType: a.type })),
        KeySchema: [
          { AttributeName: decl.partitionKey.name, KeyType: 'HASH' },
          { AttributeName: decl.sortKey.name, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: decl.globalIndexes.map((i) => ({
          IndexName: i.name,
          KeySchema: [
            { AttributeName: i.partitionKey.name, KeyType: 'HASH' },
            { AttributeName: i.sortKey.name, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        })),
      }),
    );
  } catch (err) {
    // Another process created it between our describe and create.
    if (!(err instanceof ResourceInUseException)) throw err;
    createdHere = false;
  }
  await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: tableName });
  // Only the creator turns TTL on: a second UpdateTimeToLive fails with "TimeToLive is already enabled".
  if (!createdHere) return;
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: decl.ttlAttribute, Enabled: true },
    }),
  );
}
