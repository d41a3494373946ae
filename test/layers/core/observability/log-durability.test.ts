/**
 * The logging hook tells the runtime when a request's log event is kept (the queue accepted it: on
 * disk, with the local spool), so the local server can hold the end of the answer until then.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import type { GatewayRecord } from '../../../../layers/core/src/kernel/lifecycle.ts';
import { logDurability } from '../../../../layers/core/src/observability/hooks.ts';
import { loggingHook } from '../../../../layers/core/src/observability/logging-hook.ts';
import type { LogQueueMessage } from '../../../../layers/core/src/observability/messages.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { FsBlobStore } from '../../../../layers/core/src/ports/local/blob-fs.ts';
import type { Queue } from '../../../../layers/core/src/ports/queue.ts';

const record = (id: string): GatewayRecord => ({
  id,
  traceId: `trace-${id}`,
  endpoint: 'chatComplete',
  method: 'POST',
  path: '/v1/chat/completions',
  startedAt: Date.UTC(2026, 0, 1),
  metadata: {},
  stream: false,
  status: 200,
});

/** A queue whose sends resolve when the test says: the spool's fdatasync, held. */
function heldQueue() {
  const sent: LogQueueMessage[] = [];
  const release: (() => void)[] = [];
  const queue: Queue<LogQueueMessage> = {
    send: (body) => {
      sent.push(body);
      return new Promise<void>((r) => release.push(r));
    },
    sendBatch: async () => undefined,
  };
  return { queue, sent, releaseAll: () => release.splice(0).forEach((r) => r()) };
}

const settled = async (p: Promise<unknown>) => {
  let done = false;
  void p.then(() => (done = true));
  // Enough turns of the loop for complete (setImmediate), the event build and the send.
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return done;
};

function hookWith(queue: Queue<LogQueueMessage>, durableWaitMs = 5_000) {
  return loggingHook({
    queue: () => queue,
    blobs: new FsBlobStore(mkdtempSync(path.join(os.tmpdir(), 'gantry-blobs-'))),
    clock: new ManualClock(),
    logger: new Logger({ logLevel: 'SILENT' }),
    durableAnswers: true,
    durableWaitMs,
  });
}

describe('logging hook durability', () => {
  it('resolves durable(logId) only once the queue has accepted the event', async () => {
    const q = heldQueue();
    const hook = hookWith(q.queue);
    // The answer asks first (its body is written before the hooks run), then the record completes.
    const kept = hook.durable!('log-1');
    void hook.complete?.(record('log-1'));
    expect(await settled(kept)).toBe(false);
    expect(q.sent).toHaveLength(1);
    q.releaseAll();
    expect(await settled(kept)).toBe(true);
    // Asked after the event was kept: at once.
    expect(await settled(hook.durable!('log-1'))).toBe(true);
    expect(hook.durabilityStats?.()).toEqual({ kept: 2, late: 0 });
  });

  it('sends at the next turn of the loop, not after the batch wait, with every event completed meanwhile', async () => {
    const q = heldQueue();
    const hook = hookWith(q.queue);
    for (const id of ['a', 'b', 'c']) void hook.complete?.(record(id));
    await settled(Promise.resolve());
    expect(q.sent).toEqual([
      { kind: 'logs', events: [expect.objectContaining({ id: 'a' }), expect.objectContaining({ id: 'b' }), expect.objectContaining({ id: 'c' })] },
    ]);
  });

  it('lets an answer go after durableWaitMs when no event comes for its id, and counts it', async () => {
    const hook = hookWith(heldQueue().queue, 10);
    await hook.durable!('never-completed');
    expect(hook.durabilityStats?.()).toEqual({ kept: 0, late: 1 });
  });

  it('is offered to the runtime only when answers wait (a local spool)', () => {
    const q = heldQueue().queue;
    expect(logDurability([hookWith(q)])).toBeDefined();
    const plain = loggingHook({ queue: () => q, blobs: new FsBlobStore(os.tmpdir()), clock: new ManualClock(), logger: new Logger({ logLevel: 'SILENT' }) });
    expect(plain.durable).toBeUndefined();
    expect(logDurability([plain])).toBeUndefined();
  });
});
