/**
 * The document client's Get/Put/UpdateCommand on the lean signed path, against DynamoDB Local and
 * side by side with the same commands through the AWS SDK: the same items (numbers, binary, sets,
 * nested values, undefined left out), the same answers, the same errors.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDocumentClient } from '../../../../layers/core/src/store/db.ts';
import { ensureTable } from '../../../../layers/core/src/store/create-table.ts';
import { LimitsRepository } from '../../../../layers/core/src/store/limits.ts';
import { TableClient } from '../../../../layers/core/src/store/repositories.ts';
import { observeSignedCommands, type SignedCommand } from '../../../../layers/core/src/store/signed-doc.ts';

let TableName: string;
let lean: DynamoDBDocumentClient;
let sdk: DynamoDBDocumentClient;
const signed: SignedCommand[] = [];
/** Commands the SDK's middleware saw on the lean client (only those the signed path passes on). */
const viaSdk: string[] = [];

beforeAll(async () => {
  const endpoint = inject('dynamodbEndpoint');
  TableName = `t-${randomUUID()}`;
  const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await ensureTable(client, TableName);
  client.destroy();
  lean = createDocumentClient({ region: 'local', endpoint });
  sdk = createDocumentClient({ region: 'local', endpoint, lean: false });
  expect(observeSignedCommands(lean, (c) => signed.push(c))).toBe(true);
  expect(observeSignedCommands(sdk, () => undefined)).toBe(false);
  lean.middlewareStack.add(
    (next, context) => async (args) => {
      viaSdk.push(String(context.commandName));
      return next(args);
    },
    { step: 'initialize', name: 'testSeen' },
  );
});

afterAll(() => {
  lean.destroy();
  sdk.destroy();
});

const bytes = (...b: number[]) => new Uint8Array(b);

/** Every kind of value the document client marshals. */
const sample = (pk: string) => ({
  pk,
  sk: 'ITEM',
  s: 'text é 😀',
  n: 42,
  neg: -1.5,
  big: Number.MAX_SAFE_INTEGER,
  t: true,
  f: false,
  nul: null,
  bin: bytes(0, 1, 254, 255),
  empty: '',
  list: [1, 'two', { three: 3 }, [bytes(9)]],
  map: { a: { b: { c: 'deep' } }, u: undefined },
  ss: new Set(['x', 'y']),
  ns: new Set([1, 2.5]),
  bs: new Set([bytes(1), bytes(2, 3)]),
  gone: undefined,
});

describe('the signed path of the document client', () => {
  it('puts and gets every kind of value as the SDK does', async () => {
    await lean.send(new PutCommand({ TableName, Item: sample('A') }));
    await sdk.send(new PutCommand({ TableName, Item: sample('B') }));
    const key = (pk: string) => ({ pk, sk: 'ITEM' });
    const [leanA, sdkA, leanB, sdkB] = await Promise.all([
      lean.send(new GetCommand({ TableName, Key: key('A'), ConsistentRead: true })),
      sdk.send(new GetCommand({ TableName, Key: key('A'), ConsistentRead: true })),
      lean.send(new GetCommand({ TableName, Key: key('B'), ConsistentRead: true })),
      sdk.send(new GetCommand({ TableName, Key: key('B'), ConsistentRead: true })),
    ]);
    expect(leanA.Item).toEqual(sdkA.Item);
    expect(leanB.Item).toEqual(sdkB.Item);
    expect({ ...leanA.Item, pk: 'B' }).toEqual(sdkB.Item);
    expect(leanA.Item?.bin).toBeInstanceOf(Uint8Array);
    expect(leanA.Item?.ns).toEqual(new Set([1, 2.5]));
    expect(leanA.Item).not.toHaveProperty('gone');
    expect(leanA.$metadata.httpStatusCode).toBe(200);
    // A key no item has: no Item, as the SDK answers.
    const none = await lean.send(new GetCommand({ TableName, Key: key('nobody') }));
    expect(none.Item).toBeUndefined();
  });

  it('sends them on the signed path (observable), and everything else through the SDK', async () => {
    signed.length = 0;
    viaSdk.length = 0;
    await lean.send(new PutCommand({ TableName, Item: { pk: 'C', sk: 'ITEM' } }));
    await lean.send(new GetCommand({ TableName, Key: { pk: 'C', sk: 'ITEM' } }));
    await lean.send(new UpdateCommand({ TableName, Key: { pk: 'C', sk: 'ITEM' }, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': 1 } }));
    await lean.send(new QueryCommand({ TableName, KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'C' } }));
    await lean.send(new DeleteCommand({ TableName, Key: { pk: 'C', sk: 'ITEM' } }));
    expect(signed.map((c) => [c.commandName, c.attempt])).toEqual([
      ['PutItemCommand', 1],
      ['GetItemCommand', 1],
      ['UpdateItemCommand', 1],
    ]);
    expect(signed[2]!.input).toMatchObject({ Key: { pk: 'C', sk: 'ITEM' }, ExpressionAttributeValues: { ':v': 1 } });
    expect(viaSdk).toEqual(['QueryCommand', 'DeleteItemCommand']);
  });

  it('answers a conditional update as the SDK does: Attributes on success, the old item on failure', async () => {
    const update = (pk: string, limit: number) =>
      new UpdateCommand({
        TableName,
        Key: { pk, sk: 'COUNTER' },
        UpdateExpression: 'ADD #u :n SET tags = if_not_exists(tags, :tags)',
        ConditionExpression: 'attribute_not_exists(#u) OR #u <= :max',
        ExpressionAttributeNames: { '#u': 'used' },
        ExpressionAttributeValues: { ':n': 2, ':max': limit - 2, ':tags': new Set(['a']) },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    const outs = [];
    for (const [doc, pk] of [
      [lean, 'L'],
      [sdk, 'S'],
    ] as const) {
      const ok = await doc.send(update(pk, 3));
      const refused = (await doc.send(update(pk, 3)).catch((e: unknown) => e)) as Error & Record<string, unknown>;
      outs.push({ ok, refused });
    }
    const [l, s] = outs as [(typeof outs)[0], (typeof outs)[0]];
    expect(l.ok.Attributes).toEqual({ ...s.ok.Attributes, pk: 'L' });
    expect(l.ok.Attributes).toEqual({ pk: 'L', sk: 'COUNTER', used: 2, tags: new Set(['a']) });
    expect(l.refused.name).toBe('ConditionalCheckFailedException');
    expect(l.refused.name).toBe(s.refused.name);
    expect(l.refused.message).toBe(s.refused.message);
    expect(l.refused.$fault).toBe(s.refused.$fault);
    expect((l.refused.$metadata as { httpStatusCode: number }).httpStatusCode).toBe(400);
    // Wire form, as the SDK's error carries it (store/limits.ts reads `used` from it).
    expect(l.refused.Item).toEqual({ ...(s.refused.Item as object), pk: { S: 'L' } });
    expect(l.refused.Item).toEqual({ pk: { S: 'L' }, sk: { S: 'COUNTER' }, used: { N: '2' }, tags: { SS: ['a'] } });
  });

  it('keeps binary in the old item of a failed condition as the SDK does', async () => {
    await lean.send(new PutCommand({ TableName, Item: { pk: 'BIN', sk: 'ITEM', b: bytes(1, 2, 3) } }));
    const fail = async (doc: DynamoDBDocumentClient): Promise<Record<string, unknown>> =>
      (await doc
        .send(
          new PutCommand({
            TableName,
            Item: { pk: 'BIN', sk: 'ITEM' },
            ConditionExpression: 'attribute_not_exists(pk)',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        )
        .catch((e: unknown) => e)) as Record<string, unknown>;
    const [l, s] = await Promise.all([fail(lean), fail(sdk)]);
    expect(l.Item).toEqual(s.Item);
    expect((l.Item as { b: { B: unknown } }).b.B).toBeInstanceOf(Uint8Array);
  });

  it("names DynamoDB's other errors as the SDK does", async () => {
    const bad = async (doc: DynamoDBDocumentClient, table: string): Promise<Error> =>
      (await doc.send(new UpdateCommand({ TableName: table, Key: { pk: 'x', sk: 'y' }, UpdateExpression: 'SET = oops' })).catch((e: unknown) => e)) as Error;
    const [l, s] = await Promise.all([bad(lean, TableName), bad(sdk, TableName)]);
    expect([l.name, l.message]).toEqual([s.name, s.message]);
    expect(l.name).toBe('ValidationException');
    const [lm, sm] = await Promise.all([bad(lean, 'no-such-table'), bad(sdk, 'no-such-table')]);
    expect(lm.name).toBe('ResourceNotFoundException');
    expect([lm.name, lm.message]).toEqual([sm.name, sm.message]);
  });

  it('serves the limit counter: reservations up to the limit, then a refusal with the count', async () => {
    const limits = new LimitsRepository(new TableClient(lean, TableName));
    const key = { pk: `RLC#${randomUUID()}`, sk: 'C' };
    signed.length = 0;
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await limits.reserve(key, 1, 3, { expires_at: 123 }));
    expect(results.map((r) => [r.ok, r.used])).toEqual([
      [true, 1],
      [true, 2],
      [true, 3],
      [false, 3],
    ]);
    expect(results[0]!.item).toMatchObject({ used: 1, expires_at: 123 });
    expect(await limits.adjust(key, -2)).toMatchObject({ used: 1 });
    expect(await limits.counterUsed(key)).toBe(1);
    expect(signed.map((c) => c.commandName)).toEqual([...Array(5).fill('UpdateItemCommand'), 'GetItemCommand']);
  });
});
