/**
 * The observability stores of a process, and the log-ingest and log-export workers where the queues
 * are in-process (local runtime, tests). In AWS the workers are functions of their own
 * (lambdas/workers/); the gateway hooks are in hooks.ts, which keeps the gateway bundle small.
 */
import type { CoreDeps } from '../deps.ts';
import { LocalQueueFactory } from '../ports/queue-factory.ts';
import type { QueueConsumer } from '../ports/queue.ts';
import { Analytics } from './analytics.ts';
import { ExportRepository, runExport, sinkFor, type ExportSink } from './exports.ts';
import { createIngestConsumer, type IngestStats } from './ingest.ts';
import { LogStore } from './log-store.ts';
import { EXPORTS_QUEUE, LOGS_QUEUE, type ExportQueueMessage, type LogQueueMessage } from './messages.ts';
import { RollupStore } from './rollups.ts';
import { MCP_SYNC_QUEUE, type McpSyncMessage } from '../mcp/messages.ts';

export interface Observability {
  logs: LogStore;
  rollups: RollupStore;
  analytics: Analytics;
  exports: ExportRepository;
  sink: ExportSink;
}

const built = new WeakMap<CoreDeps, Observability>();

/** The stores of one process, built once from its dependencies. */
export function observability(deps: CoreDeps): Observability {
  let o = built.get(deps);
  if (!o) {
    const { doc, tableName } = deps.repos.table;
    const rollups = new RollupStore(doc, tableName, deps.config.metricsRetentionDays);
    const logs = new LogStore({ doc, tableName, clock: deps.clock, logRetentionDays: deps.config.logRetentionDays, rollups });
    o = {
      logs,
      rollups,
      analytics: new Analytics({ rollups, logs, clock: deps.clock, logRetentionDays: deps.config.logRetentionDays }),
      exports: new ExportRepository(deps.repos.table),
      sink: sinkFor(deps.blobs),
    };
    built.set(deps, o);
  }
  return o;
}

export function ingestConsumer(deps: CoreDeps): QueueConsumer<LogQueueMessage> & { stats: IngestStats } {
  const o = observability(deps);
  return createIngestConsumer({
    doc: deps.repos.table.doc,
    tableName: deps.repos.table.tableName,
    logs: o.logs,
    rollups: o.rollups,
    queue: deps.queues.get<LogQueueMessage>(LOGS_QUEUE),
    clock: deps.clock,
    logger: deps.logger,
  });
}

export function exportConsumer(deps: CoreDeps, opts: { sliceMs?: number; sink?: ExportSink } = {}): QueueConsumer<ExportQueueMessage> {
  const o = observability(deps);
  return async (batch) => {
    const failed: string[] = [];
    for (const m of batch) {
      try {
        await runExport(
          {
            exports: o.exports,
            logs: o.logs,
            blobs: deps.blobs,
            sink: opts.sink ?? o.sink,
            queue: deps.queues.get<ExportQueueMessage>(EXPORTS_QUEUE),
            clock: deps.clock,
            logger: deps.logger,
            logRetentionDays: deps.config.logRetentionDays,
            ...(opts.sliceMs !== undefined ? { sliceMs: opts.sliceMs } : {}),
          },
          m.body,
        );
      } catch (err) {
        deps.logger.error('log export message failed; it will be delivered again', { messageId: m.id, error: err });
        failed.push(m.id);
      }
    }
    return failed;
  };
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
  deps.queues.get<McpSyncMessage>(MCP_SYNC_QUEUE).setConsumer(async (batch) => (await import('../mcp/sync-queue.ts')).mcpSyncConsumer(deps)(batch));
  const logs = deps.queues.get<LogQueueMessage>(LOGS_QUEUE);
  if (opts.ingest) return void logs.setConsumer(opts.ingest);
  const ingest = ingestConsumer(deps);
  logs.setConsumer(ingest);
  return { ingest: ingest.stats };
}
