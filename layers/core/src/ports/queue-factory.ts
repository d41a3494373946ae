/**
 * Queues by name. Locally one in-process queue per name, which consumers attach to; in AWS an SQS
 * queue whose URL the function's environment names (`QUEUE_URL_<NAME>`), consumed by its worker.
 */
import path from 'node:path';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { SqsClientRef, SqsQueue } from './aws/sqs-queue.ts';
import { InProcessQueue, type InProcessQueueOptions } from './local/in-process-queue.ts';
import { DiskSpool, type SpoolStats } from './local/spool.ts';
import type { Logger } from './logger.ts';
import { queueUrlVariable, type Queue } from './queue.ts';

export interface QueueFactory {
  get<T>(name: string): Queue<T> & Partial<Pick<InProcessQueue<T>, 'setConsumer' | 'drain' | 'deadLetters'>>;
  /** Delivers what this process still holds, then stops (shutdown); absent where a service holds the messages. */
  close?(): Promise<void>;
  /** The local spools' figures by queue name (health, metrics); absent where a service holds the messages. */
  spools?(): Record<string, SpoolStats>;
}

export { queueUrlVariable };

/** Options every local queue gets (tests pass a ManualClock here). */
export type LocalQueueDefaults = Omit<InProcessQueueOptions<unknown>, 'name' | 'consumer' | 'onDeadLetter'>;

/** Where the local queues keep their messages until consumed: `<dir>/<queue>/`, at most maxBytes each. */
export interface LocalSpoolSettings {
  dir: string;
  maxBytes: number;
  /** fdatasync before `send` resolves (default true): durable against a crash of the machine, not only of the process. */
  fsync?: boolean;
  /** Most messages each queue holds in memory; the rest wait on disk (default: no bound). */
  maxInMemory?: number;
  logger?: Logger;
}

export class LocalQueueFactory implements QueueFactory {
  readonly #queues = new Map<string, InProcessQueue<unknown>>();
  readonly #defaults: LocalQueueDefaults;
  readonly #spool: LocalSpoolSettings | undefined;
  readonly #perQueue: Readonly<Record<string, LocalQueueDefaults>>;

  /** `perQueue`: options of one queue, by name, over the defaults (the logs queue's larger batches). */
  constructor(defaults: LocalQueueDefaults = {}, spool?: LocalSpoolSettings, perQueue: Readonly<Record<string, LocalQueueDefaults>> = {}) {
    this.#defaults = defaults;
    this.#spool = spool;
    this.#perQueue = perQueue;
  }

  get<T>(name: string): InProcessQueue<T> {
    let queue = this.#queues.get(name);
    if (!queue) {
      const s = this.#spool;
      queue = new InProcessQueue<unknown>({
        ...this.#defaults,
        ...this.#perQueue[name],
        name,
        ...(s ? { spool: this.#diskSpool(name, s), maxInMemory: s.maxInMemory } : {}),
      });
      this.#queues.set(name, queue);
    }
    // One queue per name whatever T the callers name; producer and consumer agree on it.
    return queue as InProcessQueue<T>;
  }

  #diskSpool(name: string, s: LocalSpoolSettings): DiskSpool {
    return new DiskSpool({
      dir: path.join(s.dir, name),
      maxBytes: s.maxBytes,
      ...(s.fsync !== undefined ? { fsync: s.fsync } : {}),
      // Once per episode, and once at its end with the count: a full spool under a long outage
      // would otherwise log on every request.
      onFull: ({ dir, maxBytes }) =>
        s.logger?.warn('queue spool is full: new messages are kept in memory only (a crash loses them) until it has room', { queue: name, dir, maxBytes }),
      onRoom: ({ dir, refused }) => s.logger?.warn('queue spool has room again', { queue: name, dir, messages_not_spooled: refused }),
      onError: (err) => s.logger?.error('queue spool write failed', { queue: name, error: err }),
    });
  }

  spools(): Record<string, SpoolStats> {
    const out: Record<string, SpoolStats> = {};
    for (const [name, q] of this.#queues) {
      const spool = q.stats().spool;
      if (spool) out[name] = spool;
    }
    return out;
  }

  /** Drains every queue, also of messages their consumers sent to other queues. */
  async drain(): Promise<void> {
    // A consumer may send to a queue that was already drained (or that did not exist yet).
    for (;;) {
      const queues = [...this.#queues.values()];
      await Promise.all(queues.map((q) => q.drain()));
      if (queues.length === this.#queues.size && queues.every((q) => q.idle)) return;
    }
  }

  /** Drains and closes every queue (shutdown). */
  async close(): Promise<void> {
    await this.drain();
    await Promise.all([...this.#queues.values()].map((q) => q.close()));
  }
}

export interface SqsQueueFactoryOptions {
  /** Queue URLs by environment variable name (`QUEUE_URL_LOG_EVENTS` -> URL), from the config. */
  queueUrls: Readonly<Record<string, string>>;
  region?: string;
  /** A shared client; when absent one is built on first use. */
  client?: SQSClient;
  /** Send through the AWS SDK's SQS client instead of the lean signed one (GW_LEAN_AWS_CALLS=OFF). */
  sdk?: boolean;
}

export class SqsQueueFactory implements QueueFactory {
  readonly #opts: SqsQueueFactoryOptions;
  readonly #queues = new Map<string, SqsQueue<unknown>>();
  /** One client for every queue of the process, built on the first send. */
  readonly #client: SqsClientRef;

  constructor(opts: SqsQueueFactoryOptions) {
    this.#opts = opts;
    this.#client = new SqsClientRef(opts.client ?? { ...(opts.region ? { region: opts.region } : {}), ...(opts.sdk ? { sdk: true } : {}) });
  }

  /** Throws naming the variable when this function's environment has no URL for the queue. */
  get<T>(name: string): SqsQueue<T> {
    let queue = this.#queues.get(name);
    if (!queue) {
      const variable = queueUrlVariable(name);
      const queueUrl = this.#opts.queueUrls[variable];
      if (!queueUrl) throw new Error(`No URL for queue "${name}": set ${variable}`);
      queue = new SqsQueue<unknown>({ queueUrl, client: this.#client });
      this.#queues.set(name, queue);
    }
    return queue as SqsQueue<T>;
  }
}
