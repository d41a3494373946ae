/**
 * DynamoDB's key limits held by the document client itself, against DynamoDB Local: reads of a key
 * no item can have find nothing, writes of one are a 400 before anything is sent.
 */
import { BatchGetCommand, GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { KeyTooLongError } from '../../../../layers/core/src/store/key-limits.ts';
import { createTestDeps } from '../../../support/deps.ts';

const long = (n: number) => `ID#${'x'.repeat(n)}`;

describe('key limits', () => {
  let deps: CoreDeps;
  let send: CoreDeps['repos']['table']['doc']['send'];
  let TableName: string;

  beforeAll(async () => {
    deps = await createTestDeps();
    const table = deps.repos.table;
    send = table.doc.send.bind(table.doc) as typeof send;
    TableName = table.tableName;
    await send(new PutCommand({ TableName, Item: { pk: 'LIMITS', sk: 'a', v: 1 } }));
  });

  it('a get or query of an over-long key finds nothing (DynamoDB would refuse it)', async () => {
    expect((await send(new GetCommand({ TableName, Key: { pk: long(3000), sk: 'a' } }))).Item).toBeUndefined();
    expect((await send(new GetCommand({ TableName, Key: { pk: 'LIMITS', sk: long(1100) } }))).Item).toBeUndefined();
    const q = await send(
      new QueryCommand({ TableName, KeyConditionExpression: 'pk = :pk AND sk = :sk', ExpressionAttributeValues: { ':pk': 'LIMITS', ':sk': long(70_000) } }),
    );
    expect(q.Items).toEqual([]);
    const batch = await send(
      new BatchGetCommand({
        RequestItems: {
          [TableName]: {
            Keys: [
              { pk: 'LIMITS', sk: 'a' },
              { pk: long(5000), sk: 'a' },
            ],
          },
        },
      }),
    );
    expect(batch.Responses?.[TableName]).toEqual([{ pk: 'LIMITS', sk: 'a', v: 1 }]);
  });

  it('keys within the limits are read as before', async () => {
    expect((await send(new GetCommand({ TableName, Key: { pk: 'LIMITS', sk: 'a' } }))).Item).toEqual({ pk: 'LIMITS', sk: 'a', v: 1 });
    const edge = 'é'.repeat(512); // 1,024 bytes exactly
    await send(new PutCommand({ TableName, Item: { pk: 'LIMITS', sk: edge } }));
    expect((await send(new GetCommand({ TableName, Key: { pk: 'LIMITS', sk: edge } }))).Item).toBeDefined();
  });

  it('a write of an over-long key is a KeyTooLongError (400), and nothing is written', async () => {
    const refused = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => e,
      );
    for (const command of [
      new PutCommand({ TableName, Item: { pk: 'LIMITS', sk: `${'é'.repeat(512)}x` } }),
      new UpdateCommand({ TableName, Key: { pk: long(2100), sk: 'a' }, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': 1 } }),
      new PutCommand({ TableName, Item: { pk: 'LIMITS', sk: 'b', gsi1pk: 'G', gsi1sk: long(2000) } }),
      new TransactWriteCommand({
        TransactItems: [{ Put: { TableName, Item: { pk: 'LIMITS', sk: 'c' } } }, { Put: { TableName, Item: { pk: long(3000), sk: 'c' } } }],
      }),
    ]) {
      const err = await refused(send(command as never));
      expect(err).toBeInstanceOf(KeyTooLongError);
      expect((err as KeyTooLongError).status).toBe(400);
    }
    const left = await send(new QueryCommand({ TableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'LIMITS' } }));
    expect(left.Items?.map((i) => (i.sk as string).length)).toEqual([1, 512]);
  });
});
