import { describe, expect, it } from 'vitest';
import { countClientsOf, countSends, itemBytes, newTally, resolveUpdates, tallyRequest, writeUnits } from './ddb-units.ts';

describe('DynamoDB capacity units of the requests the bench counts', () => {
  it('sizes items by attribute names and values', () => {
    // "pk" + "LOG#1" = 7, "n" + 1 digit (2 bytes) = 3, "ok" + true = 3, "m" + map {"a": "xy"} = 1 + 3 + 1 + 1 + 2 = 8.
    expect(itemBytes({ pk: 'LOG#1', n: 5, ok: true, m: { a: 'xy' } })).toBe(21);
    expect(writeUnits({ body: 'x'.repeat(1_020) })).toBe(1);
    expect(writeUnits({ body: 'x'.repeat(1_030) })).toBe(2);
  });

  it('counts each put of a batch, and updates of unknown size at one unit until resolved', async () => {
    const t = newTally();
    tallyRequest(
      t,
      'BatchWriteItemCommand',
      { RequestItems: { T: [{ PutRequest: { Item: { pk: 'a' } } }, { PutRequest: { Item: { pk: 'x'.repeat(2_000) } } }] } },
      {},
    );
    tallyRequest(t, 'UpdateCommand', { TableName: 'T', Key: { pk: 'r' } }, {});
    tallyRequest(t, 'UpdateItemCommand', { TableName: 'T', Key: { pk: 'c' } }, { Attributes: { pk: 'c', v: 'y'.repeat(1_500) } });
    tallyRequest(t, 'BatchGetCommand', {}, { Responses: { T: [{ pk: 'a' }, { pk: 'b' }] } });
    expect(t).toMatchObject({ writes: 4, writeUnits: 1 + 2 + 1 + 2, reads: 2, readUnits: 1 });
    await resolveUpdates(t, async () => 3_000);
    expect(t.writeUnits).toBe(1 + 2 + 3 + 2);
    expect(t.unsizedUpdates).toEqual([]);
  });

  it('counts a command once when a counted send falls back to another counted send', async () => {
    const t = newTally();
    const inner = { send: async (_c: unknown) => ({}) };
    countSends(inner, () => t);
    const outer = { send: (c: unknown) => inner.send(c) };
    countSends(outer, () => t);
    class PutCommand {
      input = { Item: { pk: 'a' } };
    }
    await outer.send(new PutCommand());
    expect(t.writes).toBe(1);
  });

  it('keeps counting the clients a class makes when their send is replaced afterwards', async () => {
    const t = newTally();
    const cls = { from: () => ({ send: async (_c: unknown) => ({}) }) as { send: (c: unknown) => Promise<unknown> } };
    countClientsOf(cls, () => t);
    const client = cls.from();
    const sdkSend = client.send.bind(client);
    // As store/db.ts does: single-item commands one way, the rest through the SDK's send.
    client.send = async (c: unknown) => ((c as { lean?: boolean }).lean ? {} : sdkSend(c));
    class UpdateCommand {
      lean = true;
      input = { TableName: 'T', Key: { pk: 'r' } };
    }
    class BatchWriteCommand {
      input = { RequestItems: { T: [{ PutRequest: { Item: { pk: 'a' } } }] } };
    }
    await client.send(new UpdateCommand());
    await client.send(new BatchWriteCommand());
    expect(t.writes).toBe(2);
  });
});
