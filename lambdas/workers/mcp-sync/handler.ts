/**
 * The MCP sync worker: each message of the `mcp-sync` queue connects to one integration's MCP
 * server (the `initialize` handshake, then its tools, prompts and resources) and stores metadata
 * and capabilities, as the in-process consumer does with `npm start`. A server that cannot be
 * reached is recorded as `failed` (retrying would not help); only a storage failure returns the
 * message to the queue.
 */
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import type { McpSyncMessage } from '../../../layers/core/src/mcp/messages.ts';
import { mcpSyncConsumer } from '../../../layers/core/src/mcp/sync-queue.ts';
import type { QueueConsumer } from '../../../layers/core/src/ports/queue.ts';
import { depsFromEnv } from '../../shared/deps.ts';
import { createSqsHandler } from '../../shared/sqs-consumer.ts';

export function createMcpSyncHandler(getDeps: () => Promise<CoreDeps>) {
  let consumer: QueueConsumer<McpSyncMessage> | undefined;
  return createSqsHandler<McpSyncMessage>(async () => (consumer ??= mcpSyncConsumer(await getDeps())));
}

export const handler = createMcpSyncHandler(depsFromEnv);
