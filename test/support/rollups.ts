/**
 * Rollup test helpers: what the ingest's rollup step does with a batch, and a client that counts
 * the rollup items each Query reads, by kind.
 */
import type { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { addEvent, emptyAggregate, type Aggregate, type RollupKey } from '../../layers/core/src/observability/aggregate.ts';
import type { LogEvent } from '../../layers/core/src/observability/log-event.ts';
import { rollupsOf, type RollupStore } from '../../layers/core/src/observability/rollups.ts';

/** The items each Query read, by partition prefix (`RC`: combinations, `RT`: totals, `RD`: dimension values, `RS`: one value's series). */
export function counting(doc: DynamoDBDocumentClient) {
  const read = { RC: 0, RT: 0, RD: 0, RS: 0 };
  const proxy = new Proxy(doc, {
    get: (target, prop) =>
      prop === 'send'
        ? async (c: unknown) => {
            const out = (await target.send(c as never)) as { Items?: unknown[] };
            const q = c as QueryCommand;
            const pk = String(q.input?.ExpressionAttributeValues?.[':pk'] ?? '');
            if (c?.constructor?.name === 'QueryCommand' && /^R[CTDS]#/.test(pk)) read[pk.slice(0, 2) as keyof typeof read] += out.Items?.length ?? 0;
            return out;
          }
        : Reflect.get(target, prop),
  }) as DynamoDBDocumentClient;
  return { proxy, read };
}

/** What the ingest's rollup step does with a batch: its dimension values admitted, then one add per distinct item, 16 at once. */
export async function ingestRollups(store: RollupStore, events: readonly LogEvent[], keep: (key: RollupKey) => boolean = () => true): Promise<void> {
  const pending = await store.admit([...rollupsOf(events.map((event) => ({ messageId: event.id, event }))).values()].filter((p) => keep(p.key)));
  for (let i = 0; i < pending.length; i += 16) await Promise.all(pending.slice(i, i + 16).map((p) => store.add(p.key, p.agg)));
}

export const sumOf = (events: readonly LogEvent[]): Aggregate => {
  const a = emptyAggregate();
  for (const e of events) addEvent(a, e);
  return a;
};
