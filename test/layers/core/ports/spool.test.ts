/** The local queues' durable spool: nothing accepted is lost to a failing consumer or a restart, and it stays bounded. */
import { mkdtempSync, readdirSync, appendFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../../../layers/core/src/config.ts';
import { InProcessQueue } from '../../../../layers/core/src/ports/local/in-process-queue.ts';
import { DiskSpool } from '../../../../layers/core/src/ports/local/spool.ts';
import { LocalQueueFactory } from '../../../../layers/core/src/ports/queue-factory.ts';

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'gantry-spool-'));
const msg = (n: number) => ({ id: `m${n}`, body: { n } });

describe('DiskSpool', () => {
  it('gives back, after a restart, exactly the messages not acknowledged, oldest first', () => {
    const dir = tmp();
    const spool = new DiskSpool({ dir, maxBytes: 1 << 20 });
    expect(spool.replay()).toEqual([]);
    expect(spool.append([msg(1), msg(2)])).toBe(true);
    expect(spool.append([msg(3)])).toBe(true);
    spool.ack(['m2']);
    expect(spool.stats()).toMatchObject({ pending: 2, dropped: 0 });
    spool.close();

    const again = new DiskSpool({ dir, maxBytes: 1 << 20 });
    expect(again.replay()).toEqual([msg(1), msg(3)]);
    again.append([msg(4)]);
    again.ack(['m1', 'm3', 'm4']);
    again.close();
    // Everything acknowledged: no file is left behind.
    expect(readdirSync(dir)).toEqual([]);
    expect(new DiskSpool({ dir, maxBytes: 1 << 20 }).replay()).toEqual([]);
  });

  it('skips a line torn by a crash mid-write and keeps the rest', () => {
    const dir = tmp();
    const spool = new DiskSpool({ dir, maxBytes: 1 << 20 });
    spool.replay();
    spool.append([msg(1)]);
    spool.close();
    appendFileSync(path.join(dir, readdirSync(dir)[0] ?? ''), '{"id":"m2","bo');
    const restarted = new DiskSpool({ dir, maxBytes: 1 << 20 });
    expect(restarted.replay()).toEqual([msg(1)]);
    // What the next process appends is never glued to the torn line: it starts a segment of its own.
    restarted.append([msg(3)]);
    restarted.close();
    expect(new DiskSpool({ dir, maxBytes: 1 << 20 }).replay()).toEqual([msg(1), msg(3)]);
  });

  it('makes appends durable by group commit: one fdatasync for all who wait while another runs', async () => {
    const dir = tmp();
    const spool = new DiskSpool({ dir, maxBytes: 1 << 20 });
    spool.replay();
    const waits: Promise<void>[] = [];
    for (let n = 1; n <= 50; n++) {
      spool.append([msg(n)]);
      waits.push(spool.sync());
    }
    await Promise.all(waits);
    // The first append's fdatasync, then one shared by the 49 that arrived while it ran.
    expect(spool.stats().syncs).toBeGreaterThanOrEqual(1);
    expect(spool.stats().syncs).toBeLessThanOrEqual(2);
    expect(spool.stats().syncErrors).toBe(0);
    // Nothing appended since: no new fdatasync.
    const done = spool.stats().syncs;
    await spool.sync();
    expect(spool.stats().syncs).toBe(done);
    spool.close();
    expect(new DiskSpool({ dir, maxBytes: 1 << 20 }).replay()).toHaveLength(50);
  });

  it('does no fdatasync with fsync off (a crash of the process still keeps the appends)', async () => {
    const dir = tmp();
    const spool = new DiskSpool({ dir, maxBytes: 1 << 20, fsync: false });
    spool.replay();
    spool.append([msg(1)]);
    await spool.sync();
    expect(spool.stats().syncs).toBe(0);
    expect(new DiskSpool({ dir, maxBytes: 1 << 20 }).replay()).toEqual([msg(1)]);
  });

  it('refuses new messages when full, keeps the oldest, counts the refused and warns once per episode', () => {
    const dir = tmp();
    const line = Buffer.byteLength(`${JSON.stringify(msg(1))}\n`);
    const full: string[] = [];
    const room: number[] = [];
    const spool = new DiskSpool({ dir, maxBytes: 3 * line, segmentBytes: 1 << 20, onFull: (i) => full.push(i.dir), onRoom: (i) => room.push(i.refused) });
    spool.replay();
    const accepted = [1, 2, 3, 4, 5].map((n) => spool.append([msg(n)]));
    expect(accepted).toEqual([true, true, true, false, false]);
    expect(spool.stats()).toMatchObject({ dropped: 2, pending: 3, full: true, bytes: 3 * line, maxBytes: 3 * line });
    expect(full).toEqual([dir]);

    // Acknowledging the whole segment frees the space (the acknowledged prefix is truncated); the
    // end of the episode is reported with its count, and the next full episode warns again.
    spool.ack(['m1', 'm2', 'm3']);
    expect(spool.stats().bytes).toBe(0);
    expect([6, 7, 8, 9].map((n) => spool.append([msg(n)]))).toEqual([true, true, true, false]);
    expect(room).toEqual([2]);
    expect(spool.stats().dropped).toBe(3);
    expect(full).toEqual([dir, dir]);
    spool.close();
    expect(new DiskSpool({ dir, maxBytes: 3 * line }).replay().map((m) => m.id)).toEqual(['m6', 'm7', 'm8']);
  });

  it('deletes a fully acknowledged segment once a newer one started', () => {
    const dir = tmp();
    const spool = new DiskSpool({ dir, maxBytes: 1 << 20, segmentBytes: 1 });
    spool.replay();
    spool.append([msg(1)]);
    spool.append([msg(2)]);
    expect(readdirSync(dir).filter((f) => f.endsWith('.jsonl'))).toHaveLength(2);
    spool.ack(['m1']);
    expect(readdirSync(dir).filter((f) => f.endsWith('.jsonl'))).toHaveLength(1);
    spool.close();
    expect(new DiskSpool({ dir, maxBytes: 1 << 20 }).replay()).toEqual([msg(2)]);
  });
});

describe('InProcessQueue with a spool', () => {
  const queue = (dir: string, consumer?: (ns: number[]) => string[] | Promise<string[]>) =>
    new InProcessQueue<{ n: number }>({
      name: 'logs',
      flushMs: 0,
      backoffMs: 0,
      maxAttempts: 2,
      spool: new DiskSpool({ dir, maxBytes: 1 << 20 }),
      ...(consumer ? { consumer: async (batch) => ((await consumer(batch.map((m) => m.body.n))).length ? batch.map((m) => m.id) : []) } : {}),
    });

  it('resolves send once the message is durable: a crash right after it finds the message', async () => {
    const dir = tmp();
    const q = queue(dir);
    await q.send({ n: 1 });
    expect(q.stats().spool).toMatchObject({ pending: 1 });
    expect(q.stats().spool?.syncs).toBeGreaterThanOrEqual(1);
    // A new process on the same directory (the first one never closed: a crash).
    expect(new DiskSpool({ dir, maxBytes: 1 << 20 }).replay().map((m) => m.body)).toEqual([{ n: 1 }]);
  });

  it('delivers its dead letters again once the consumer works again (the database is back), without a restart', async () => {
    const dir = tmp();
    let down = true;
    const got: number[] = [];
    const q = new InProcessQueue<{ n: number }>({
      name: 'logs',
      flushMs: 0,
      backoffMs: 0,
      maxAttempts: 2,
      redriveMs: 20,
      spool: new DiskSpool({ dir, maxBytes: 1 << 20 }),
      consumer: async (batch) => (down ? batch.map((m) => m.id) : (got.push(...batch.map((m) => m.body.n)), [])),
    });
    await q.sendBatch([{ n: 1 }, { n: 2 }, { n: 3 }]);
    await q.drain();
    expect(q.deadLetters()).toHaveLength(3);
    down = false;
    await vi.waitFor(() => expect(got.sort()).toEqual([1, 2, 3]), { timeout: 5_000 });
    await q.drain();
    expect(q.deadLetters()).toHaveLength(0);
    expect(q.stats().spool).toMatchObject({ pending: 0, bytes: 0 });
    await q.close();
  });

  it('delivers after a restart what a failing consumer never acknowledged (dead letters included), once', async () => {
    const dir = tmp();
    const first = queue(dir, () => ['fail']);
    await first.sendBatch([{ n: 1 }, { n: 2 }]);
    await first.send({ n: 3 });
    await first.drain();
    expect(first.deadLetters()).toHaveLength(3);
    expect(first.stats().spool).toMatchObject({ pending: 3 });

    // The restart: a new queue on the same directory with a consumer that works.
    const seen: number[] = [];
    const second = queue(dir, (ns) => (seen.push(...ns), []));
    await second.drain();
    expect(seen.sort()).toEqual([1, 2, 3]);
    await second.close();

    const third = queue(dir, (ns) => (seen.push(...ns), []));
    await third.drain();
    expect(seen).toHaveLength(3);
    expect(third.stats().spool).toMatchObject({ pending: 0, bytes: 0 });
  });
});

describe('spool configuration', () => {
  it('spools to <GW_DATA_DIR>/spool/<queue>/, bounded by GW_LOG_SPOOL_MAX_MB; none with :memory: data', async () => {
    const dir = tmp();
    expect(loadConfig({ TABLE_NAME: 't', GW_DATA_DIR: `${dir}/` }).spool).toEqual({ dir: `${dir}/spool`, maxBytes: 256 * 1024 * 1024, fsync: false });
    expect(loadConfig({ TABLE_NAME: 't', GW_DATA_DIR: dir, GW_LOG_SPOOL_MAX_MB: '2' }).spool?.maxBytes).toBe(2 * 1024 * 1024);
    expect(loadConfig({ TABLE_NAME: 't', GW_DATA_DIR: ':memory:' }).spool).toBeUndefined();
    expect(loadConfig({ TABLE_NAME: 't' }).spool).toBeUndefined();
    expect(() => loadConfig({ TABLE_NAME: 't', GW_LOG_SPOOL_MAX_MB: '0' })).toThrow(/GW_LOG_SPOOL_MAX_MB/);

    expect(loadConfig({ TABLE_NAME: 't', GW_DATA_DIR: dir, GW_LOG_SPOOL_FSYNC: 'ON' }).spool?.fsync).toBe(true);
    expect(() => loadConfig({ TABLE_NAME: 't', GW_DATA_DIR: dir, GW_LOG_SPOOL_FSYNC: 'maybe' })).toThrow(/GW_LOG_SPOOL_FSYNC/);

    const queues = new LocalQueueFactory({}, { dir: path.join(dir, 'spool'), maxBytes: 1 << 20 });
    await queues.get<{ n: number }>('logs').send({ n: 1 });
    expect(readdirSync(path.join(dir, 'spool', 'logs'))).toHaveLength(1);
    expect(queues.get('logs').stats().spool).toMatchObject({ pending: 1 });
    // Every spooled queue's figures, for health and metrics.
    expect(queues.spools()).toEqual({ logs: expect.objectContaining({ pending: 1, dropped: 0, full: false, maxBytes: 1 << 20 }) });
  });
});
