/**
 * The log-export worker: one message of the `log-exports` queue runs an export for up to ten
 * minutes (the function may run fifteen), then queues its own continuation.
 */
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import { exportConsumer } from '../../../layers/core/src/observability/install.ts';
import type { ExportQueueMessage } from '../../../layers/core/src/observability/messages.ts';
import type { QueueConsumer } from '../../../layers/core/src/ports/queue.ts';
import { depsFromEnv } from '../../shared/deps.ts';
import { createSqsHandler } from '../../shared/sqs-consumer.ts';

export const EXPORT_SLICE_MS = 10 * 60_000;

export function createLogExportHandler(getDeps: () => Promise<CoreDeps>) {
  let consumer: QueueConsumer<ExportQueueMessage> | undefined;
  return createSqsHandler<ExportQueueMessage>(async () => (consumer ??= exportConsumer(await getDeps(), { sliceMs: EXPORT_SLICE_MS })));
}

export const handler = createLogExportHandler(depsFromEnv);
