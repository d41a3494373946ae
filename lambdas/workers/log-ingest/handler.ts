/** The log-ingest worker: batches of the `logs` SQS queue written to DynamoDB (logs and rollups). */
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import { ingestConsumer } from '../../../layers/core/src/observability/install.ts';
import type { LogQueueMessage } from '../../../layers/core/src/observability/messages.ts';
import type { QueueConsumer } from '../../../layers/core/src/ports/queue.ts';
import { depsFromEnv } from '../../shared/deps.ts';
import { createSqsHandler } from '../../shared/sqs-consumer.ts';

export function createLogIngestHandler(getDeps: () => Promise<CoreDeps>) {
  let consumer: QueueConsumer<LogQueueMessage> | undefined;
  return createSqsHandler<LogQueueMessage>(async () => (consumer ??= ingestConsumer(await getDeps())));
}

export const handler = createLogIngestHandler(depsFromEnv);
