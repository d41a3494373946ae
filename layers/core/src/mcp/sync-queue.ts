/**
 * Syncs run off the request path: creating or changing an integration sends a message to the
 * `mcp-sync` queue, whose consumer runs the discovery (in-process locally; an SQS worker in AWS).
 * A sync that cannot be queued leaves the metadata `pending`; `GET .../metadata?refresh=true` runs
 * one on demand.
 */
import type { CoreDeps } from '../deps.ts';
import type { QueueConsumer } from '../ports/queue.ts';
import { McpRepository } from '../store/mcp.ts';
import { syncIntegration, type SyncDeps } from './discovery.ts';
import { guardedMcpFetch } from './fetch.ts';
import { MCP_SYNC_QUEUE, type McpSyncMessage } from './messages.ts';

export function syncDeps(deps: CoreDeps): SyncDeps {
  return {
    mcp: new McpRepository(deps.repos.table),
    cipher: deps.cipher,
    fetch: guardedMcpFetch(deps.upstream, deps.trustedHosts),
    clock: deps.clock,
    logger: deps.logger,
  };
}

/** Queues a sync; a queue that cannot take it is logged, never an error for the admin call. */
export async function requestSync(deps: CoreDeps, organisationId: string, integrationId: string): Promise<void> {
  try {
    await deps.queues.get<McpSyncMessage>(MCP_SYNC_QUEUE).send({ organisation_id: organisationId, mcp_integration_id: integrationId });
  } catch (err) {
    deps.logger.warn('could not queue an MCP integration sync; it stays pending until refreshed', {
      organisationId,
      mcpIntegrationId: integrationId,
      error: err instanceof Error ? err.message : String(err),
    });
  }
}

export function mcpSyncConsumer(deps: CoreDeps): QueueConsumer<McpSyncMessage> {
  const sync = syncDeps(deps);
  return async (batch) => {
    const failed: string[] = [];
    for (const m of batch) {
      try {
        await syncIntegration(sync, m.body.organisation_id, m.body.mcp_integration_id);
      } catch (err) {
        deps.logger.error('MCP sync message failed; it will be delivered again', { messageId: m.id, error: err });
        failed.push(m.id);
      }
    }
    return failed;
  };
}
