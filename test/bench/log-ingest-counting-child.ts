/**
 * The log-ingest child (lambdas/local/log-ingest-child.ts) as the bench's Gantry runs it, with the
 * DynamoDB requests it makes counted (ddb-units.ts) so the bench can report items written per log,
 * rollups included. The counts are written to BENCH_INGEST_COUNTS (a JSON file) only when the
 * process gets SIGUSR2, so counting costs the worker nothing but an increment per request; they
 * are the counts as of the last batch answered, to match that batch's `logsWritten`.
 * It runs from the TypeScript sources, not from the bundle: the counter must wrap the same
 * document client class the worker uses.
 */
import { writeFileSync } from 'node:fs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { countClientsOf, newTally } from './ddb-units.ts';

const file = process.env.BENCH_INGEST_COUNTS;
const live = newTally();
/** What the counts were when the worker last answered a batch (write units of updates at 1 each: their size is unknown here). */
let answered = { writes: 0, writeUnits: 0, reads: 0, readUnits: 0, logsWritten: 0, batches: 0 };

countClientsOf(DynamoDBDocumentClient, () => live);

// The worker's answers carry its stats: the counts at that moment go with them.
const send = process.send?.bind(process);
if (send) {
  process.send = ((m: unknown, ...rest: unknown[]) => {
    if (typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'done') {
      const stats = (m as { stats?: { logsWritten?: number } }).stats;
      const { writes, writeUnits, reads, readUnits } = live;
      answered = { writes, writeUnits, reads, readUnits, logsWritten: stats?.logsWritten ?? 0, batches: answered.batches + 1 };
      // The keys of updates are for looking sizes up afterwards, which this process does not do.
      live.unsizedUpdates.length = 0;
    }
    return (send as (...a: unknown[]) => boolean)(m, ...rest);
  }) as typeof process.send;
}

process.on('SIGUSR2', () => {
  if (file) writeFileSync(file, JSON.stringify(answered));
});

await import('../../lambdas/local/log-ingest-child.ts');
