/**
 * Runs the log-ingest worker out of the serving process, as AWS does (a function of its own fed by
 * SQS): the `logs` queue of the local server hands each batch to a child process
 * (log-ingest-child.ts) and waits for its answer, one batch at a time, so the serving event loop
 * never writes logs and the queue's bound (GW_QUEUE_MAX_IN_MEMORY, the rest spooled to disk) is the
 * bound of the channel. A child that dies fails its batch, which the queue delivers again to a new one.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { IngestStats } from '../../layers/core/src/observability/ingest.ts';
import type { LogQueueMessage } from '../../layers/core/src/observability/messages.ts';
import type { Logger } from '../../layers/core/src/ports/logger.ts';
import type { Queue, QueueConsumer } from '../../layers/core/src/ports/queue.ts';
import { isFromChild, type BatchMessage, type FromChild } from './log-ingest-protocol.ts';

export interface LogIngestProcessOptions {
  /** The child's environment: the same configuration as the server's (table, endpoint, region). */
  env: Readonly<Record<string, string | undefined>>;
  /** The server's `logs` queue, where the child sends back what it could not finish (rollup updates, batch markers, unwritten events). */
  requeue: Queue<LogQueueMessage>;
  logger?: Logger;
  /** The child's script; by default the one beside this module (the bundle's sibling when bundled). */
  script?: URL;
}

export interface LogIngestProcess {
  /** The `logs` queue's consumer. */
  consumer: QueueConsumer<LogQueueMessage>;
  /** What the children wrote so far, in all. */
  stats(): IngestStats;
  /** The running child's pid, if one runs. */
  pid(): number | undefined;
  /** Stops the child (after the queue was drained). */
  close(): Promise<void>;
}

const ZERO: IngestStats = { logsWritten: 0, busyMs: 0, duplicates: 0, rollupUpdates: 0, rollupsRequeued: 0, failedMessages: 0, eventsRequeued: 0 };

// Bundled (dist/local/main.mjs) the child is the sibling bundle log-ingest-child.mjs.
const defaultScript = (): URL => new URL(import.meta.url.endsWith('.ts') ? './log-ingest-child.ts' : './log-ingest-child.mjs', import.meta.url);

interface Running {
  proc: ChildProcess;
  ready: Promise<void>;
  /** The stats the child last reported (its own, since it started). */
  last: IngestStats;
}

export function startLogIngestProcess(opts: LogIngestProcessOptions): LogIngestProcess {
  const script = opts.script ?? defaultScript();
  const waiting = new Map<number, { resolve: (failed: string[]) => void; reject: (err: Error) => void }>();
  let earlier = ZERO;
  let running: Running | undefined;
  let seq = 0;

  const spawn = (): Running => {
    const proc = fork(script, [], { env: { ...opts.env }, execArgv: [], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let failStart: (err: Error) => void = () => undefined;
    const ready = new Promise<void>((resolve, reject) => {
      failStart = reject;
      proc.once('message', () => resolve());
    });
    ready.catch(() => undefined);
    const r: Running = { proc, ready, last: ZERO };
    proc.on('message', (m: unknown) => onMessage(r, m));
    proc.once('exit', (code, signal) => {
      failStart(new Error(`the log-ingest process exited before it was ready (${signal ?? `code ${code}`})`));
      earlier = add(earlier, r.last);
      if (running === r) running = undefined;
      const err = new Error(`the log-ingest process stopped (${signal ?? `code ${code}`})`);
      for (const w of waiting.values()) w.reject(err);
      waiting.clear();
      if (code !== 0) opts.logger?.warn('log-ingest process stopped; its batch will be delivered again', { code, signal });
    });
    return r;
  };

  const onMessage = (r: Running, m: unknown): void => {
    if (!isFromChild(m)) return;
    if (m.type === 'done') {
      r.last = m.stats;
      waiting.get(m.seq)?.resolve(m.failed);
      waiting.delete(m.seq);
    } else if (m.type === 'requeue') void requeue(m);
  };

  const requeue = async (m: Extract<FromChild, { type: 'requeue' }>) => {
    try {
      await opts.requeue.sendBatch(m.bodies);
    } catch (err) {
      opts.logger?.error('messages from the log-ingest process could not be queued again; they are lost', { count: m.bodies.length, error: err });
    }
  };

  const consumer: QueueConsumer<LogQueueMessage> = async (batch) => {
    const r = (running ??= spawn());
    await r.ready;
    const id = ++seq;
    const answer = new Promise<string[]>((resolve, reject) => waiting.set(id, { resolve, reject }));
    const message: BatchMessage = { type: 'batch', seq: id, batch: [...batch] };
    r.proc.send(message);
    return answer;
  };

  return {
    consumer,
    stats: () => add(earlier, running?.last ?? ZERO),
    pid: () => running?.proc.pid,
    async close() {
      const r = running;
      if (!r || r.proc.exitCode !== null) return;
      const exited = once(r.proc, 'exit');
      r.proc.disconnect();
      await exited;
    },
  };
}

function add(a: IngestStats, b: IngestStats): IngestStats {
  return {
    logsWritten: a.logsWritten + b.logsWritten,
    busyMs: a.busyMs + b.busyMs,
    duplicates: a.duplicates + b.duplicates,
    rollupUpdates: a.rollupUpdates + b.rollupUpdates,
    rollupsRequeued: a.rollupsRequeued + b.rollupsRequeued,
    failedMessages: a.failedMessages + b.failedMessages,
    eventsRequeued: a.eventsRequeued + b.eventsRequeued,
  };
}
