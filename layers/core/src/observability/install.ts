/**
 * The observability stores of a process, and the log-ingest and log-export workers where the queues
 * are in-process (local runtime, tests). In AWS the workers are functions of their own
 * (lambdas/workers/); the gateway hooks are in hooks.ts, which keeps the gateway bundle small.
 */
import type { CoreDeps } from '../deps.ts';
import type { QueueConsumer } from '../ports/queue.ts';
import { Analytics } from './analytics.ts';
import { ExportRepository, runExport, sinkFor, type ExportSink } from './exports.ts';
import { createIngestConsumer, type IngestStats } from './ingest.ts';
import { LogStore } from './log-store.ts';
import { EXPORTS_QUEUE, LOGS_QUEUE, type ExportQueueMessage, type LogQueueMessage } from './messages.ts';
import { RollupStore } from './rollups.ts';

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
    const rollups = new RollupStore(doc, tableName, deps.config.metricsRetentionDays, () => deps.clock.now());
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
