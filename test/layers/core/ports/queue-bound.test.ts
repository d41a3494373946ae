/**
 * A local queue whose consumer falls behind holds at most `maxInMemory` messages in memory; the rest
 * wait in its spool on disk and are delivered, in order, once the consumer catches up, also by the
 * next process after a crash.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../layers/core/src/config.ts';
import { InProcessQueue } from '../../../../layers/core/src/ports/local/in-process-queue.ts';
import { DiskSpool } from '../../../../layers/core/src/ports/local/spool.ts';
import type { QueueMessage } from '../../../../layers/core/src/ports/queue.ts';

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'gantry-bound-'));
const spoolIn = (dir: string) => new DiskSpool({ dir, maxBytes: 1 << 24 });
const bodies = (from: number, n: number) => Array.from({ length: n }, (_, k) => ({ n: from + k, pad: 'x'.repeat(200) }));

/** A consumer that records what it got, optionally failing each message's first delivery. */
function recorder(failFirst = false) {
  const got: number[] = [];
  const seen = new Set<string>();
  const consumer = async (batch: readonly QueueMessage<{ n: number }>[]) => {
    const failed: string[] = [];
    for (const m of batch) {
      if (failFirst && !seen.has(m.id)) {
        seen.add(m.id);
        failed.push(m.id);
      } else got.push(m.body.n);
    }
    return failed;
  };
  return { got, consumer };
}

describe('InProcessQueue with maxInMemory', () => {
  it('keeps at most maxInMemory messages in memory while its consumer is away, and delivers all in order after', async () => {
    const dir = tmp();
    const q = new InProcessQueue<{ n: number }>({ name: 'logs', spool: spoolIn(dir), maxInMemory: 30, flushMs: 0 });
    for (let k = 0; k < 20; k++) await q.sendBatch(bodies(k * 10, 10));
    expect(q.stats()).toMatchObject({ inMemory: 30, onDiskOnly: 170, spool: { pending: 200 } });

    const { got, consumer } = recorder();
    q.setConsumer(consumer);
    await q.drain();
    expect(got).toEqual(Array.from({ length: 200 }, (_, k) => k));
    expect(q.stats()).toMatchObject({ inMemory: 0, onDiskOnly: 0, spool: { pending: 0, bytes: 0 } });
    await q.close();
  });

  it('stays within the bound while a slow consumer retries, and loses nothing', async () => {
    const dir = tmp();
    const q = new InProcessQueue<{ n: number }>({ name: 'logs', spool: spoolIn(dir), maxInMemory: 25, flushMs: 0, backoffMs: 1, batchSize: 10 });
    const { got, consumer } = recorder(true);
    let peak = 0;
    q.setConsumer(async (batch) => {
      peak = Math.max(peak, q.stats().inMemory);
      return consumer(batch);
    });
    for (let k = 0; k < 30; k++) await q.sendBatch(bodies(k * 5, 5));
    peak = Math.max(peak, q.stats().inMemory);
    await q.drain();
    expect(peak).toBeLessThanOrEqual(25);
    expect([...got].sort((a, b) => a - b)).toEqual(Array.from({ length: 150 }, (_, k) => k));
    await q.close();
  });

  it('delivers after a crash what the crashed process held in memory and on disk only', async () => {
    const dir = tmp();
    // The first process accepts 121 messages and dies before any consumer ran (no close, no drain).
    const crashed = new InProcessQueue<{ n: number }>({ name: 'logs', spool: spoolIn(dir), maxInMemory: 40 });
    await crashed.sendBatch(bodies(0, 30));
    await crashed.sendBatch(bodies(30, 91));
    expect(crashed.stats()).toMatchObject({ inMemory: 30, onDiskOnly: 91 });

    const restarted = new InProcessQueue<{ n: number }>({ name: 'logs', spool: spoolIn(dir), maxInMemory: 40, flushMs: 0 });
    expect(restarted.stats()).toMatchObject({ inMemory: 40, onDiskOnly: 81 });
    const { got, consumer } = recorder();
    restarted.setConsumer(consumer);
    await restarted.drain();
    expect(got).toEqual(Array.from({ length: 121 }, (_, k) => k));
    await restarted.close();
  });

  it('takes its bound from GW_QUEUE_MAX_IN_MEMORY (default 2000) and names the variable when it is out of range', () => {
    const dir = tmp();
    expect(loadConfig({ TABLE_NAME: 't', GW_DATA_DIR: dir }).queueMaxInMemory).toBe(2000);
    expect(loadConfig({ TABLE_NAME: 't', GW_DATA_DIR: dir, GW_QUEUE_MAX_IN_MEMORY: '500' }).queueMaxInMemory).toBe(500);
    expect(() => loadConfig({ TABLE_NAME: 't', GW_QUEUE_MAX_IN_MEMORY: '3' })).toThrow(/GW_QUEUE_MAX_IN_MEMORY/);
  });
});
