/**
 * The log-ingest worker: batches of the `logs` SQS queue written to DynamoDB (logs and rollups).
 * Built from the few things ingest uses (the table, the queue, a clock, a logger), not from
 * `createDeps`: the function's bundle carries none of the gateway, the admin API or the other AWS
 * clients, and its cold start builds nothing else.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { loadConfig } from '../../../layers/core/src/config.ts';
import { ingestConsumerOf } from '../../../layers/core/src/observability/ingest.ts';
import { LOGS_QUEUE, type LogQueueMessage } from '../../../layers/core/src/observability/messages.ts';
import { SqsQueue } from '../../../layers/core/src/ports/aws/sqs-queue.ts';
import { systemClock } from '../../../layers/core/src/ports/clock.ts';
import { queueUrlVariable, type QueueConsumer } from '../../../layers/core/src/ports/queue.ts';
import { createDocumentClient } from '../../../layers/core/src/store/db.ts';
import { createSqsHandler } from '../../shared/sqs-consumer.ts';

export function createLogIngestHandler(getConsumer: () => Promise<QueueConsumer<LogQueueMessage>>) {
  let consumer: Promise<QueueConsumer<LogQueueMessage>> | undefined;
  return createSqsHandler<LogQueueMessage>(() => (consumer ??= getConsumer()));
}

/** The consumer from the function's environment (the same variables `loadConfig` checks everywhere). */
export async function ingestFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<QueueConsumer<LogQueueMessage>> {
  const config = loadConfig(env);
  const variable = queueUrlVariable(LOGS_QUEUE);
  const queueUrl = config.queueUrls[variable];
  if (!queueUrl) throw new Error(`No URL for queue "${LOGS_QUEUE}": set ${variable}`);
  return ingestConsumerOf({
    doc: createDocumentClient({ region: config.region, endpoint: config.dynamodbEndpoint, timeouts: config.dynamodbTimeouts, lean: config.leanAwsCalls }),
    tableName: config.tableName,
    queue: new SqsQueue<LogQueueMessage>({ queueUrl, region: config.region, sdk: config.leanAwsCalls === false }),
    clock: systemClock,
    logger: new Logger({ serviceName: 'gantry', logLevel: config.logLevel }),
    logRetentionDays: config.logRetentionDays,
    metricsRetentionDays: config.metricsRetentionDays,
  });
}

export const handler = createLogIngestHandler(() => ingestFromEnv());
