/**
 * InProcessQueue: batches, order, partial failure, redelivery with backoff, dead letters. Time only
 * moves through the injected clock: a ManualClock (sleeps end at once and are recorded) or a
 * HeldClock (sleeps end when the test says so).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ManualClock, type Clock } from '../../../../layers/core/src/ports/clock.ts';
import { InProcessQueue, type InProcessQueueOptions } from '../../../../layers/core/src/ports/local/in-process-queue.ts';
import { DiskSpool } from '../../../../layers/core/src/ports/local/spool.ts';
import type { QueueConsumer, QueueMessage } from '../../../../layers/core/src/ports/queue.ts';

/** Sleeps that end only on release() (or abort). */
class HeldClock implements Clock {
  readonly waits: { ms: number; resolve: () => void }[] = [];
  now(): number {
    return 0;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const wait = { ms, resolve };
      this.waits.push(wait);
      signal?.addEventListener(
        'abort',
        () => {
          this.waits.splice(this.waits.indexOf(wait), 1);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }
  release(): void {
    for (const w of this.waits.splice(0)) w.resolve();
  }
}

/** Lets every pending promise chain run (no time passes). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

interface Delivery {
  bodies: unknown[];
  attempts: number[];
}

/** A consumer that records each batch and fails the messages `fail` picks. */
function recorder<T>(fail: (m: QueueMessage<T>) => boolean = () => false) {
  const deliveries: Delivery[] = [];
  const consumer: QueueConsumer<T> = async (batch) => {
    deliveries.push({ bodies: batch.map((m) => m.body), attempts: batch.map((m) => m.attempts) });
    return batch.filter(fail).map((m) => m.id);
  };
  return { deliveries, consumer };
}

function queueWith<T>(opts: Partial<InProcessQueueOptions<T>> = {}) {
  const clock = new ManualClock();
  const queue = new InProcessQueue<T>({ name: 'test', clock, ...opts });
  return { queue, clock };
}

describe('InProcessQueue', () => {
  it('delivers in batches of at most batchSize, in the order sent', async () => {
    const { deliveries, consumer } = recorder<number>();
    const { queue, clock } = queueWith<number>({ consumer, batchSize: 3 });
    await queue.sendBatch([1, 2, 3, 4, 5, 6, 7]);
    await queue.drain();
    expect(deliveries.map((d) => d.bodies)).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
    expect(deliveries.flatMap((d) => d.attempts)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    // A full first batch does not wait for more.
    expect(clock.sleeps).toEqual([]);
  });

  it('holds a partial batch for flushMs, and sends it at once when it fills up', async () => {
    const clock = new HeldClock();
    const { deliveries, consumer } = recorder<string>();
    const queue = new InProcessQueue<string>({ name: 'q', consumer, clock, batchSize: 3 });
    await queue.send('a');
    await queue.send('b');
    await settle();
    expect(deliveries).toEqual([]);
    expect(clock.waits.map((w) => w.ms)).toEqual([20]);

    await queue.send('c');
    await settle();
    expect(deliveries.map((d) => d.bodies)).toEqual([['a', 'b', 'c']]);
    expect(clock.waits).toEqual([]);

    await queue.send('d');
    await settle();
    expect(deliveries).toHaveLength(1);
    clock.release();
    await queue.drain();
    expect(deliveries.map((d) => d.bodies)).toEqual([['a', 'b', 'c'], ['d']]);
  });

  it('has at most one batch in flight, and send never waits for the consumer', async () => {
    let inFlight = 0;
    let most = 0;
    const seen: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { queue } = queueWith<number>({
      batchSize: 2,
      consumer: async (batch) => {
        most = Math.max(most, ++inFlight);
        seen.push(...batch.map((m) => m.body));
        await gate;
        inFlight--;
        return [];
      },
    });
    await queue.sendBatch([1, 2]);
    await settle();
    expect(seen).toEqual([1, 2]);
    // Sent while the first batch is held by the consumer: enqueued, not delivered.
    await queue.sendBatch([3, 4, 5]);
    await queue.send(6);
    await settle();
    expect(seen).toEqual([1, 2]);
    release();
    await queue.drain();
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
    expect(most).toBe(1);
  });

  it('redelivers only the ids the consumer returns, with attempts + 1 after the backoff', async () => {
    const { deliveries, consumer } = recorder<string>((m) => m.body === 'b' && m.attempts === 0);
    const { queue, clock } = queueWith<string>({ consumer, flushMs: 0 });
    await queue.sendBatch(['a', 'b', 'c']);
    await queue.drain();
    expect(deliveries).toEqual([
      { bodies: ['a', 'b', 'c'], attempts: [0, 0, 0] },
      { bodies: ['b'], attempts: [1] },
    ]);
    expect(clock.sleeps).toEqual([100]);
    expect(queue.deadLetters()).toEqual([]);
  });

  it('keeps the message id across redeliveries and ignores ids not in the batch', async () => {
    const ids: string[][] = [];
    const { queue } = queueWith<string>({
      consumer: async (batch) => {
        ids.push(batch.map((m) => m.id));
        return ids.length === 1 ? [batch[0]!.id, 'not-in-this-batch'] : [];
      },
    });
    await queue.send('x');
    await queue.drain();
    expect(ids).toHaveLength(2);
    expect(ids[1]).toEqual(ids[0]);
  });

  it('redelivers the whole batch when the consumer throws', async () => {
    let calls = 0;
    const deliveries: Delivery[] = [];
    const { queue } = queueWith<number>({
      consumer: async (batch) => {
        deliveries.push({ bodies: batch.map((m) => m.body), attempts: batch.map((m) => m.attempts) });
        if (calls++ === 0) throw new Error('downstream is down');
        return [];
      },
    });
    await queue.sendBatch([1, 2]);
    await queue.drain();
    expect(deliveries).toEqual([
      { bodies: [1, 2], attempts: [0, 0] },
      { bodies: [1, 2], attempts: [1, 1] },
    ]);
  });

  it('dead-letters a message after maxAttempts deliveries, doubling the backoff each time', async () => {
    const dead: QueueMessage<string>[] = [];
    const { deliveries, consumer } = recorder<string>((m) => m.body === 'poison');
    const { queue, clock } = queueWith<string>({ consumer, flushMs: 0, maxAttempts: 4, backoffMs: 50, onDeadLetter: (m) => dead.push(m) });
    await queue.sendBatch(['poison', 'fine']);
    await queue.drain();
    expect(deliveries.map((d) => [d.bodies, d.attempts])).toEqual([
      [
        ['poison', 'fine'],
        [0, 0],
      ],
      [['poison'], [1]],
      [['poison'], [2]],
      [['poison'], [3]],
    ]);
    expect(clock.sleeps).toEqual([50, 100, 200]);
    expect(queue.deadLetters()).toMatchObject([{ body: 'poison', attempts: 3 }]);
    expect(dead).toEqual(queue.deadLetters());
  });

  it('keeps delivering when the dead-letter hook throws', async () => {
    const { deliveries, consumer } = recorder<string>((m) => m.body === 'poison');
    const { queue } = queueWith<string>({
      consumer,
      maxAttempts: 1,
      onDeadLetter: () => {
        throw new Error('hook failed');
      },
    });
    await queue.send('poison');
    await queue.drain();
    await queue.send('next');
    await queue.drain();
    expect(deliveries.map((d) => d.bodies)).toEqual([['poison'], ['next']]);
    expect(queue.deadLetters()).toHaveLength(1);
  });

  it('lets other messages through while one waits out its backoff', async () => {
    const clock = new HeldClock();
    const { deliveries, consumer } = recorder<string>((m) => m.body === 'retry' && m.attempts === 0);
    const queue = new InProcessQueue<string>({ name: 'q', consumer, clock, flushMs: 0 });
    await queue.send('retry');
    await settle();
    expect(clock.waits.map((w) => w.ms)).toEqual([100]);
    await queue.send('later');
    await settle();
    expect(deliveries.map((d) => d.bodies)).toEqual([['retry'], ['later']]);
    clock.release();
    await queue.drain();
    expect(deliveries.map((d) => [d.bodies, d.attempts])).toEqual([
      [['retry'], [0]],
      [['later'], [0]],
      [['retry'], [1]],
    ]);
  });

  it('clones bodies on send, so the producer may change its object afterwards', async () => {
    const { deliveries, consumer } = recorder<{ n: number; tags: string[] }>();
    const { queue } = queueWith<{ n: number; tags: string[] }>({ consumer });
    const body = { n: 1, tags: ['a'] };
    await queue.send(body);
    body.n = 2;
    body.tags.push('b');
    await queue.drain();
    expect(deliveries[0]?.bodies).toEqual([{ n: 1, tags: ['a'] }]);
  });

  it('refuses a batch with a body that cannot be cloned, enqueueing none of it', async () => {
    const { deliveries, consumer } = recorder<unknown>();
    const { queue } = queueWith<unknown>({ consumer });
    await expect(queue.sendBatch([{ ok: true }, { fn: () => 1 }])).rejects.toThrow(/could not be cloned/);
    await queue.drain();
    expect(deliveries).toEqual([]);
  });

  it('with a spool: refuses a batch with a body JSON cannot carry, spooling and enqueueing none of it', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gantry-queue-json-'));
    const spool = new DiskSpool({ dir, maxBytes: 1 << 20, fsync: false });
    const { deliveries, consumer } = recorder<unknown>();
    const { queue } = queueWith<unknown>({ consumer, spool });
    await expect(queue.sendBatch([{ ok: true }, { big: 1n }])).rejects.toThrow(TypeError);
    await expect(queue.send(undefined)).rejects.toThrow(/must be JSON/);
    await queue.drain();
    expect(deliveries).toEqual([]);
    expect(spool.stats().pending).toBe(0);
  });

  it('with a spool: a restart replays each body as the JSON the producer sent', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gantry-queue-json-'));
    const first = new InProcessQueue<{ n: number; s: string }>({ name: 'logs', spool: new DiskSpool({ dir, maxBytes: 1 << 20, fsync: false }) });
    await first.sendBatch([
      { n: 1, s: 'quote " and \\ and \u2028' },
      { n: 2, s: 'two' },
    ]);
    const { deliveries, consumer } = recorder<{ n: number; s: string }>();
    const second = new InProcessQueue({ name: 'logs', consumer, spool: new DiskSpool({ dir, maxBytes: 1 << 20, fsync: false }), clock: new ManualClock() });
    await second.drain();
    expect(deliveries.flatMap((d) => d.bodies)).toEqual([
      { n: 1, s: 'quote " and \\ and \u2028' },
      { n: 2, s: 'two' },
    ]);
  });

  it('keeps messages until a consumer is attached; drain without one rejects naming the queue', async () => {
    const queue = new InProcessQueue<number>({ name: 'alerts', clock: new ManualClock() });
    await queue.sendBatch([1, 2]);
    await expect(queue.drain()).rejects.toThrow(/alerts has 2 message\(s\) and no consumer/);
    const { deliveries, consumer } = recorder<number>();
    queue.setConsumer(consumer);
    await queue.drain();
    expect(deliveries.map((d) => d.bodies)).toEqual([[1, 2]]);
  });

  it('drain resolves at once when idle, and waits for messages a consumer sends to its own queue', async () => {
    const seen: number[] = [];
    const { queue } = queueWith<number>();
    await queue.drain();
    expect(queue.idle).toBe(true);
    queue.setConsumer(async (batch) => {
      for (const m of batch) {
        seen.push(m.body);
        if (m.body < 3) await queue.send(m.body + 1);
      }
      return [];
    });
    await queue.send(0);
    expect(queue.idle).toBe(false);
    await queue.drain();
    expect(seen).toEqual([0, 1, 2, 3]);
    expect(queue.idle).toBe(true);
  });

  it('close drains, then refuses new messages', async () => {
    const { deliveries, consumer } = recorder<string>((m) => m.attempts === 0);
    const { queue } = queueWith<string>({ consumer });
    await queue.send('a');
    await queue.close();
    expect(deliveries.map((d) => d.attempts)).toEqual([[0], [1]]);
    await expect(queue.send('b')).rejects.toThrow('Queue test is closed');
  });

  it.each([
    [{ batchSize: 0 }, 'batchSize'],
    [{ batchSize: 2.5 }, 'batchSize'],
    [{ maxAttempts: 0 }, 'maxAttempts'],
    [{ flushMs: -1 }, 'flushMs'],
    [{ backoffMs: Number.NaN }, 'backoffMs'],
  ])('refuses the option %j', (opts, name) => {
    expect(() => new InProcessQueue({ name: 'q', ...opts })).toThrow(new RegExp(name));
  });

  it('never keeps the process alive: its timers are unref’d', () => {
    // A message waits out a 10-minute backoff; the process must still exit once nothing else runs.
    const module = fileURLToPath(new URL('../../../../layers/core/src/ports/local/in-process-queue.ts', import.meta.url));
    const script = `
      const { InProcessQueue } = await import(${JSON.stringify(module)});
      const q = new InProcessQueue({ name: 'q', flushMs: 0, backoffMs: 600000, consumer: async (b) => {
        console.log('delivered', b[0].attempts);
        return b.map((m) => m.id);
      } });
      await q.send({ hello: 'world' });
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    expect(child.stdout).toBe('delivered 0\n');
  });
});
