/**
 * Queue in this process (local runtime), with SQS's delivery contract: batches, partial failure,
 * redelivery with a growing delay, and a dead-letter list after too many attempts.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Queue, QueueConsumer, QueueMessage } from '../queue.ts';
import type { DiskSpool, SpoolStats } from './spool.ts';

export interface InProcessQueueOptions<T> {
  name: string;
  consumer?: QueueConsumer<T>;
  /** Most messages in one delivery (default 25). */
  batchSize?: number;
  /** How long a partial batch waits for more messages before it goes out (default 20 ms). */
  flushMs?: number;
  /** Deliveries before a message goes to the dead-letter list (default 5). */
  maxAttempts?: number;
  /** Delay before the first redelivery, doubled for each later one (default 100 ms). */
  backoffMs?: number;
  /** For tests. The default one's timers are unref'd; a clock passed here keeps its own. */
  clock?: Clock;
  onDeadLetter?: (m: QueueMessage<T>) => void;
  /**
   * Keeps every accepted message on disk until its consumer acknowledged it (`send` resolves once it
   * is durable: the spool's group fdatasync); what an earlier process left unacknowledged (dead
   * letters included) is enqueued again here. Bodies must be JSON; with a spool they are kept as
   * given (their JSON text is the copy), so a producer must not change a body after sending it.
   */
  spool?: DiskSpool;
  /**
   * With a spool: how long dead letters wait before they are delivered again (default 10 s), so a
   * consumer that failed for a while (the database down) gets them once it works again, without a
   * restart; 0: never. Without a spool they stay dead, as in an SQS dead-letter queue.
   */
  redriveMs?: number;
  /**
   * With a spool: most messages held in memory (ready, in delivery, waiting for a redelivery, dead).
   * Beyond it, accepted messages wait on disk only and are read back as the queue empties, so a
   * consumer that falls behind costs disk, not memory. Without a spool there is nowhere else to put
   * them and it does not apply. Default: no bound.
   */
  maxInMemory?: number;
}

/** Real time, with timers that never keep the process alive. */
const unrefClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

export class InProcessQueue<T> implements Queue<T> {
  readonly name: string;
  readonly #batchSize: number;
  readonly #flushMs: number;
  readonly #maxAttempts: number;
  readonly #backoffMs: number;
  readonly #clock: Clock;
  readonly #onDeadLetter: ((m: QueueMessage<T>) => void) | undefined;
  readonly #spool: DiskSpool | undefined;
  readonly #maxInMemory: number;
  readonly #redriveMs: number;
  /** The next redrive of the dead letters, while one is scheduled. */
  #redrive: ReturnType<typeof setTimeout> | undefined;
  /** Ids of the messages held in memory, anywhere (the spool holds them too, until acknowledged). */
  readonly #held = new Set<string>();
  /** Accepted messages kept on disk only, in the spool's order, after every held one. */
  #onDisk = 0;
  #consumer: QueueConsumer<T> | undefined;
  /** Ready for delivery, oldest first. */
  readonly #ready: QueueMessage<T>[] = [];
  readonly #dead: QueueMessage<T>[] = [];
  /** One per message waiting out its backoff; settles once it is back in #ready. */
  readonly #backoffs = new Set<Promise<void>>();
  /** The delivery loop while it runs (it never rejects). */
  #pump: Promise<void> | undefined;
  /** Cuts the wait for a partial batch short once a full batch is ready. */
  #flushWait: AbortController | undefined;
  readonly #stop = new AbortController();
  #closed = false;

  constructor(opts: InProcessQueueOptions<T>) {
    this.name = opts.name;
    this.#consumer = opts.consumer;
    this.#batchSize = positiveInt('batchSize', opts.batchSize ?? 25);
    this.#flushMs = nonNegative('flushMs', opts.flushMs ?? 20);
    this.#maxAttempts = positiveInt('maxAttempts', opts.maxAttempts ?? 5);
    this.#backoffMs = nonNegative('backoffMs', opts.backoffMs ?? 100);
    this.#clock = opts.clock ?? unrefClock;
    this.#onDeadLetter = opts.onDeadLetter;
    this.#spool = opts.spool;
    this.#maxInMemory = opts.maxInMemory === undefined ? Infinity : positiveInt('maxInMemory', opts.maxInMemory);
    this.#redriveMs = nonNegative('redriveMs', opts.redriveMs ?? 10_000);
    // The spool's bodies were written by a producer of this queue, so they are T.
    const replayed = this.#spool?.replay() ?? [];
    const kept = replayed.slice(0, this.#maxInMemory);
    this.#onDisk = replayed.length - kept.length;
    if (kept.length > 0 || this.#onDisk > 0) this.#enqueue(kept.map((m) => ({ id: m.id, body: m.body as T, attempts: 0 })));
  }

  async send(body: T): Promise<void> {
    await this.sendBatch([body]);
  }

  /** Enqueues, and resolves once the messages are durable in the spool (if any); delivery happens later, never on the caller's time. */
  async sendBatch(bodies: readonly T[]): Promise<void> {
    if (this.#closed) throw new Error(`Queue ${this.name} is closed`);
    const spool = this.#spool;
    // Written before send resolves; a full spool still delivers from memory (counted in stats()).
    let spooled = false;
    let messages: QueueMessage<T>[];
    if (spool) {
      // Serialised first, so a body that is not JSON enqueues nothing of its batch. The JSON text
      // is the copy that matters (what a restart replays, what SQS would carry): the body itself is
      // kept as given, not cloned a second time (a structured clone per event was 3% of the local
      // server's CPU with request logs on). Producers hand their bodies over and never change them.
      const lines = bodies.map((b) => ({ id: randomUUID(), json: jsonOf(b) }));
      messages = bodies.map((body, i) => ({ id: (lines[i] as { id: string }).id, body, attempts: 0 }));
      spooled = spool.appendJson(lines);
    } else {
      // No JSON text to stand for the body: a structured clone keeps it apart from the producer's
      // object, as a queue's copy is. Clone all first so a body that cannot be cloned enqueues nothing.
      messages = bodies.map((b) => ({ id: randomUUID(), body: structuredClone(b), attempts: 0 }));
    }
    // Once some wait on disk, later ones wait behind them there: delivery stays in order.
    if (spooled && (this.#onDisk > 0 || this.#held.size + messages.length > this.#maxInMemory)) {
      this.#onDisk += messages.length;
      this.#kick();
    } else this.#enqueue(messages);
    // Durable before send resolves (delivery need not wait for it): one fdatasync for many senders.
    if (spooled) await this.#spool?.sync();
  }

  setConsumer(c: QueueConsumer<T>): void {
    this.#consumer = c;
    this.#kick();
  }

  /**
   * Resolves once nothing is ready, in flight or waiting for a redelivery. Rejects when messages
   * wait and no consumer is attached, since waiting would never end.
   */
  async drain(): Promise<void> {
    for (;;) {
      if (this.#pump) await this.#pump;
      else if (this.#backoffs.size > 0) await Promise.all(this.#backoffs);
      else if (this.#ready.length > 0 || this.#onDisk > 0) {
        if (!this.#consumer) {
          throw new Error(`Queue ${this.name} has ${this.#ready.length + this.#onDisk} message(s) and no consumer`);
        }
        this.#kick();
      } else return;
    }
  }

  /** Nothing ready, in flight or waiting for a redelivery. */
  get idle(): boolean {
    return !this.#pump && this.#backoffs.size === 0 && this.#ready.length === 0 && this.#onDisk === 0;
  }

  /**
   * The spool's counters (bytes on disk, messages not spooled because it was full, unacknowledged),
   * the messages held in memory and those waiting on disk only.
   */
  stats(): { spool: SpoolStats | undefined; inMemory: number; onDiskOnly: number } {
    return { spool: this.#spool?.stats(), inMemory: this.#held.size, onDiskOnly: this.#onDisk };
  }

  deadLetters(): readonly QueueMessage<T>[] {
    return [...this.#dead];
  }

  /** Drains, then refuses new messages and stops every timer. */
  async close(): Promise<void> {
    await this.drain();
    this.#closed = true;
    clearTimeout(this.#redrive);
    this.#stop.abort(new Error(`Queue ${this.name} is closed`));
    this.#spool?.close();
  }

  #enqueue(messages: QueueMessage<T>[]): void {
    for (const m of messages) this.#held.add(m.id);
    this.#ready.push(...messages);
    if (this.#ready.length >= this.#batchSize) this.#flushWait?.abort();
    this.#kick();
  }

  #kick(): void {
    if (this.#pump || !this.#consumer || (this.#ready.length === 0 && (this.#onDisk === 0 || this.#room() === 0))) return;
    this.#pump = this.#run().finally(() => {
      this.#pump = undefined;
      // Messages that came back while the loop was finishing.
      this.#kick();
    });
  }

  async #run(): Promise<void> {
    if (this.#ready.length < this.#batchSize && this.#flushMs > 0) {
      this.#flushWait = new AbortController();
      try {
        await this.#clock.sleep(this.#flushMs, AbortSignal.any([this.#flushWait.signal, this.#stop.signal]));
      } catch {
        // Cut short: a full batch is ready, or the queue closed.
      } finally {
        this.#flushWait = undefined;
      }
    }
    // One batch at a time keeps messages in order; later ones wait for the current batch.
    for (let consumer = this.#consumer; consumer && this.#readBack() > 0; consumer = this.#consumer) {
      await this.#deliver(consumer, this.#ready.splice(0, this.#batchSize));
    }
  }

  /** Messages the bound lets in now; dead letters do not count, or enough of them would stop delivery. */
  #room(): number {
    return Math.max(0, this.#maxInMemory - (this.#held.size - this.#dead.length));
  }

  /** Tops the ready list up from the messages waiting on disk; answers how many are ready. */
  #readBack(): number {
    if (this.#onDisk === 0 || this.#ready.length >= this.#batchSize || !this.#spool) return this.#ready.length;
    const room = this.#room();
    if (room === 0) return this.#ready.length;
    const back = this.#spool.readBack(this.#held, Math.min(room, this.#onDisk));
    // Fewer than expected: their files are gone (removed by hand); nothing more can be read.
    this.#onDisk = back.length === 0 ? 0 : this.#onDisk - back.length;
    for (const m of back) this.#held.add(m.id);
    this.#ready.push(...back.map((m) => ({ id: m.id, body: m.body as T, attempts: 0 })));
    return this.#ready.length;
  }

  async #deliver(consumer: QueueConsumer<T>, batch: QueueMessage<T>[]): Promise<void> {
    let failed: ReadonlySet<string>;
    try {
      failed = new Set(await consumer(batch));
    } catch {
      // As in SQS: a consumer that throws fails its whole batch.
      failed = new Set(batch.map((m) => m.id));
    }
    // Dead letters stay in the spool (and held): redriven after redriveMs, or by the next process.
    const done = batch.filter((m) => !failed.has(m.id)).map((m) => m.id);
    for (const id of done) this.#held.delete(id);
    this.#spool?.ack(done);
    for (const m of batch) if (failed.has(m.id)) this.#retry(m);
  }

  /**
   * Dead letters go back to the ready list (their attempts from zero, as an SQS redrive) after
   * redriveMs: the outage that killed them may be over. Not counted by drain: nothing waits on it.
   * Real time even with a test clock, whose sleeps end at once: that would redeliver in a loop.
   */
  #scheduleRedrive(): void {
    if (this.#redrive || this.#closed || !redrives(this.#spool, this.#redriveMs)) return;
    this.#redrive = setTimeout(() => {
      this.#redrive = undefined;
      if (this.#closed) return;
      const back = this.#dead.splice(0);
      if (back.length > 0) this.#enqueue(back.map((m) => ({ ...m, attempts: 0 })));
    }, this.#redriveMs);
    this.#redrive.unref();
  }

  #retry(m: QueueMessage<T>): void {
    if (m.attempts + 1 >= this.#maxAttempts) {
      this.#dead.push(m);
      try {
        this.#onDeadLetter?.(m);
      } catch {
        // A failing hook must not stop delivery of everything else.
      }
      this.#scheduleRedrive();
      return;
    }
    const next = { ...m, attempts: m.attempts + 1 };
    const backoff = this.#clock
      .sleep(this.#backoffMs * 2 ** m.attempts, this.#stop.signal)
      .then(
        () => this.#enqueue([next]),
        () => undefined,
      )
      .finally(() => this.#backoffs.delete(backoff));
    this.#backoffs.add(backoff);
  }
}

/** Whether the dead letters will be delivered again (a spool keeps them, so the next process would anyway). */
function redrives(spool: DiskSpool | undefined, redriveMs: number): boolean {
  return spool !== undefined && redriveMs > 0;
}

/** A body's JSON text; a body JSON cannot carry (undefined, a function, a cycle) is refused. */
function jsonOf(body: unknown): string {
  const json = JSON.stringify(body);
  if (typeof json !== 'string') throw new TypeError('A queue message body must be JSON');
  return json;
}

function positiveInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer, got ${v}`);
  return v;
}

function nonNegative(name: string, v: number): number {
  if (!Number.isFinite(v) || v < 0) throw new RangeError(`${name} must be a non-negative number, got ${v}`);
  return v;
}
