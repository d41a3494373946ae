/**
 * The log-ingest worker as a process of its own (started by log-ingest-process.ts), as it is a
 * function of its own in AWS: it writes the batches its parent's `logs` queue hands it to DynamoDB
 * and answers which failed. What it sends back to the queue (rollup updates and batch markers it
 * could not write, the unwritten events of a partly written message) goes to the parent's queue,
 * which spools it before the child's answer is read. It exits when its parent goes away.
 */
import { loadConfig } from '../../layers/core/src/config.ts';
import { createIngestConsumer } from '../../layers/core/src/observability/ingest.ts';
import { LogStore } from '../../layers/core/src/observability/log-store.ts';
import type { LogQueueMessage } from '../../layers/core/src/observability/messages.ts';
import { RollupStore } from '../../layers/core/src/observability/rollups.ts';
import { serviceLogger } from '../../layers/core/src/ports/aws/adapters.ts';
import { systemClock } from '../../layers/core/src/ports/clock.ts';
import type { Queue } from '../../layers/core/src/ports/queue.ts';
import { createDocumentClient } from '../../layers/core/src/store/db.ts';
import { isToChild, type FromChild } from './log-ingest-protocol.ts';

const send = (m: FromChild) => process.send?.(m);

const config = loadConfig(process.env);
const doc = createDocumentClient({ region: config.region, endpoint: config.dynamodbEndpoint, timeouts: config.dynamodbTimeouts, lean: config.leanAwsCalls });
const rollups = new RollupStore(doc, config.tableName, config.metricsRetentionDays);
const logs = new LogStore({ doc, tableName: config.tableName, clock: systemClock, logRetentionDays: config.logRetentionDays, rollups });
// The parent's queue: it owns the spool, so every message has one writer.
const parentQueue: Queue<LogQueueMessage> = {
  send: async (body) => void send({ type: 'requeue', bodies: [body] }),
  sendBatch: async (bodies) => void send({ type: 'requeue', bodies: [...bodies] }),
};
const ingest = createIngestConsumer({ doc, tableName: config.tableName, logs, rollups, queue: parentQueue, clock: systemClock, logger: serviceLogger(config) });

process.on('message', (m: unknown) => {
  if (!isToChild(m)) return;
  ingest(m.batch).then(
    (failed) => send({ type: 'done', seq: m.seq, failed, stats: { ...ingest.stats } }),
    // As in SQS: a consumer that throws fails its whole batch.
    () => send({ type: 'done', seq: m.seq, failed: m.batch.map((x) => x.id), stats: { ...ingest.stats } }),
  );
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
