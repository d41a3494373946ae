/**
 * The local runtime's composition, for the local server and the tests: its adapters (files in the
 * data directory, mail to an outbox, in-process queues, a key file or KMS when CIPHER_KMS_KEY_ID is
 * set, batches run in-process) and the workers that consume its queues in the same process.
 */
import os from 'node:os';
import path from 'node:path';
import type { AppConfig } from './config.ts';
import type { RuntimeAdapters } from './ports/adapters.ts';
import { KmsCipher } from './ports/aws/cipher-kms.ts';
import { awsAdapters, serviceLogger } from './ports/aws/adapters.ts';
import { systemClock, type Clock } from './ports/clock.ts';
import { LocalQueueFactory, type LocalQueueDefaults } from './ports/queue-factory.ts';
import { LocalBatchDriver } from './batches/local-driver.ts';
import type { CoreDeps } from './deps.ts';
import { MCP_SYNC_QUEUE, type McpSyncMessage } from './mcp/messages.ts';
import { exportConsumer, ingestConsumer } from './observability/install.ts';
import type { IngestStats } from './observability/ingest.ts';
import { EXPORTS_QUEUE, LOGS_QUEUE, type ExportQueueMessage, type LogQueueMessage } from './observability/messages.ts';
import type { QueueConsumer } from './ports/queue.ts';
import { FsBlobStore } from './ports/local/blob-fs.ts';
import { FileCipher } from './ports/local/cipher-file.ts';
import { OutboxMailer } from './ports/local/outbox-mailer.ts';

/**
 * The logs queue hands its consumer (the log-ingest process) up to 250 messages at once, as SQS's
 * batching window hands the ingest function thousands: a batch shares its rollup updates, its
 * marker and its requests to the table, so DynamoDB Local spends less per log the larger it is.
 * Under light traffic a batch leaves after the queue's 20 ms wait with what it has.
 */
export const LOCAL_QUEUE_OPTIONS: Readonly<Record<string, LocalQueueDefaults>> = { [LOGS_QUEUE]: { batchSize: 250 } };

export function localAdapters(config: AppConfig, clock: Clock = systemClock): RuntimeAdapters {
  const logger = serviceLogger(config);
  return {
    blobs: new FsBlobStore(config.blobDir ?? path.join(os.tmpdir(), 'gantry-blobs')),
    mailer: new OutboxMailer(config.outboxDir ?? path.join(os.tmpdir(), 'gantry-outbox'), clock),
    // Queue timing (batching, redelivery backoff) is not business time: it always runs on real
    // timers, never on an injected test clock, which it would otherwise move.
    queues: new LocalQueueFactory({}, config.spool ? { ...config.spool, maxInMemory: config.queueMaxInMemory, logger } : undefined, LOCAL_QUEUE_OPTIONS),
    cipher: config.cipherKmsKeyId ? new KmsCipher({ keyId: config.cipherKmsKeyId, region: config.region }) : new FileCipher({ keyFile: config.cipherKeyFile }),
    logger,
    clock,
    batchRunner: (deps) => new LocalBatchDriver(deps),
  };
}

/**
 * The local server on AWS (GW_STORAGE=aws, replicas sharing one deployment): the Lambda functions'
 * adapters (SQS, S3, KMS, SES). Without an SES sender mail goes to the outbox directory rather than
 * failing, as `npm start` sends it; each replica has its own, so production sets MAIL_FROM.
 */
export function serverAwsAdapters(config: AppConfig, clock: Clock = systemClock): RuntimeAdapters {
  const adapters = awsAdapters(config);
  if (config.mailFrom) return { ...adapters, clock };
  return { ...adapters, clock, mailer: new OutboxMailer(config.outboxDir ?? path.join(os.tmpdir(), 'gantry-outbox'), clock) };
}

/**
 * Locally (in-process queues): runs the log-export and MCP sync workers in this process, and the
 * log-ingest worker too unless `ingest` is given (the local server's, which runs it in a process of
 * its own).
 */
export function attachLocalWorkers(deps: CoreDeps, opts: { ingest?: QueueConsumer<LogQueueMessage> } = {}): { ingest: IngestStats } | undefined {
  if (!(deps.queues instanceof LocalQueueFactory)) return undefined;
  deps.queues.get<ExportQueueMessage>(EXPORTS_QUEUE).setConsumer(exportConsumer(deps));
  // Imported on the first sync: the MCP SDK stays out of processes that never sync.
  deps.queues.get<McpSyncMessage>(MCP_SYNC_QUEUE).setConsumer(async (batch) => (await import('./mcp/sync-queue.ts')).mcpSyncConsumer(deps)(batch));
  const logs = deps.queues.get<LogQueueMessage>(LOGS_QUEUE);
  if (opts.ingest) return void logs.setConsumer(opts.ingest);
  const ingest = ingestConsumer(deps);
  logs.setConsumer(ingest);
  return { ingest: ingest.stats };
}
