/**
 * Log events sent while the table is unavailable wait in the local queue's spool on disk, and the
 * next process on the same data directory stores every one of them once the table is there.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LogEvent } from '../../../../layers/core/src/observability/log-event.ts';
import { observability } from '../../../../layers/core/src/observability/install.ts';
import { LOGS_QUEUE, type LogQueueMessage } from '../../../../layers/core/src/observability/messages.ts';
import { DAY_MS, HOUR_MS } from '../../../../layers/core/src/observability/time.ts';
import { LocalQueueFactory } from '../../../../layers/core/src/ports/queue-factory.ts';
import { createTestDeps, createTestDepsOn } from '../../../support/deps.ts';
import { syntheticEvents } from '../../../support/observability.ts';

describe('log spool across a database outage and a restart', () => {
  it('stores, after the restart, every event sent while the table was missing, exactly once', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gantry-data-'));
    const start = Date.now() - 2 * HOUR_MS;
    const events = syntheticEvents(40, { start, spanMs: HOUR_MS, workspaceId: 'ws-spool', seed: 31, busyMinutes: 3 });

    // First process: its table does not exist, so every delivery fails until the dead letters.
    const down = createTestDepsOn(`missing-${Date.now()}`, { GW_DATA_DIR: dataDir });
    const queue = down.queues.get<LogQueueMessage>(LOGS_QUEUE);
    await queue.sendBatch(events.slice(0, 30).map((event) => ({ kind: 'log' as const, event })));
    await queue.send({ kind: 'logs', events: events.slice(30) });
    await down.queues.close?.();
    expect(queue.deadLetters?.()).toHaveLength(31);
    down.upstream.close();

    // The restart, with the table there: the spool is replayed to the ingest worker.
    const up = await createTestDeps({ GW_DATA_DIR: dataDir });
    if (!(up.queues instanceof LocalQueueFactory)) throw new Error('expected local queues');
    await up.queues.drain();
    const stored: LogEvent[] = [];
    for await (const e of observability(up).logs.all('ws-spool', { from: start - DAY_MS, to: Date.now() + DAY_MS }, { maxExamined: 10_000 })) stored.push(e);
    expect(stored.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    expect(up.queues.get(LOGS_QUEUE).stats().spool).toMatchObject({ pending: 0, bytes: 0, dropped: 0 });
    await up.queues.close();
    up.upstream.close();

    // A third start finds nothing left to deliver.
    const again = createTestDepsOn(up.repos.table.tableName, { GW_DATA_DIR: dataDir });
    if (!(again.queues instanceof LocalQueueFactory)) throw new Error('expected local queues');
    expect(again.queues.get(LOGS_QUEUE).stats().spool).toMatchObject({ pending: 0 });
    again.upstream.close();
  });
});
