/**
 * The local server's log-ingest worker runs in a process of its own (as a function of its own in
 * AWS): every queued log event is stored by it, and a child killed in the middle of a batch loses
 * nothing, since the queue delivers the batch again to a new child.
 */
import { inject, describe, expect, it } from 'vitest';
import { observability } from '../../../layers/core/src/observability/install.ts';
import { attachLocalWorkers } from '../../../layers/core/src/local-adapters.ts';
import type { LogEvent } from '../../../layers/core/src/observability/log-event.ts';
import { LOGS_QUEUE, type LogQueueMessage } from '../../../layers/core/src/observability/messages.ts';
import { DAY_MS, HOUR_MS } from '../../../layers/core/src/observability/time.ts';
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import { startLogIngestProcess } from '../../../lambdas/local/log-ingest-process.ts';
import { createTestDeps } from '../../support/deps.ts';
import { syntheticEvents } from '../../support/observability.ts';

const childEnv = (deps: CoreDeps) => ({
  TABLE_NAME: deps.repos.table.tableName,
  DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
  AWS_REGION: 'local',
  LOG_LEVEL: 'SILENT',
  PATH: process.env.PATH,
});

async function storedIds(deps: CoreDeps, workspaceId: string, start: number): Promise<string[]> {
  const stored: LogEvent[] = [];
  for await (const e of observability(deps).logs.all(workspaceId, { from: start - DAY_MS, to: Date.now() + DAY_MS }, { maxExamined: 10_000 })) stored.push(e);
  return stored.map((e) => e.id).sort();
}

describe('log ingest in a process of its own', () => {
  it('stores every queued event from a child process, and stops the child on close', async () => {
    const deps = await createTestDeps();
    const queue = deps.queues.get<LogQueueMessage>(LOGS_QUEUE);
    const ingest = startLogIngestProcess({ env: childEnv(deps), requeue: queue });
    attachLocalWorkers(deps, { ingest: ingest.consumer });
    const start = Date.now() - 2 * HOUR_MS;
    const events = syntheticEvents(60, { start, spanMs: HOUR_MS, workspaceId: 'ws-child', seed: 7 });

    await queue.sendBatch(events.map((event) => ({ kind: 'log' as const, event })));
    await deps.queues.close?.();
    const pid = ingest.pid();
    expect(pid).toBeGreaterThan(0);
    expect(pid).not.toBe(process.pid);
    expect(ingest.stats().logsWritten).toBe(60);
    expect(await storedIds(deps, 'ws-child', start)).toEqual(events.map((e) => e.id).sort());

    await ingest.close();
    expect(ingest.pid()).toBeUndefined();
    deps.upstream.close();
  });

  it('delivers a batch again to a new child when its child is killed in the middle of it, storing each event once', async () => {
    const deps = await createTestDeps();
    const queue = deps.queues.get<LogQueueMessage>(LOGS_QUEUE);
    const ingest = startLogIngestProcess({ env: childEnv(deps), requeue: queue });
    const pids = new Set<number>();
    let killed = false;
    attachLocalWorkers(deps, {
      ingest: async (batch) => {
        const answer = ingest.consumer(batch);
        // The child has the batch (or will, once ready): kill it before it can answer.
        if (!killed) {
          killed = true;
          await new Promise((r) => setTimeout(r, 50));
          process.kill(ingest.pid() ?? 0, 'SIGKILL');
        }
        const failed = await answer;
        pids.add(ingest.pid() ?? 0);
        return failed;
      },
    });
    const start = Date.now() - 2 * HOUR_MS;
    const events = syntheticEvents(30, { start, spanMs: HOUR_MS, workspaceId: 'ws-crash', seed: 9 });

    await queue.sendBatch(events.map((event) => ({ kind: 'log' as const, event })));
    await deps.queues.close?.();
    expect(killed).toBe(true);
    expect(await storedIds(deps, 'ws-crash', start)).toEqual(events.map((e) => e.id).sort());
    expect(queue.deadLetters?.()).toEqual([]);
    await ingest.close();
    deps.upstream.close();
  });
});
