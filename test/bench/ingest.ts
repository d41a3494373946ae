/**
 * `node test/bench/ingest.ts`: what the log-ingest worker and the database spend per logged
 * request (issue 33). N events (BENCH_INGEST_EVENTS, default 5,000) go to the local server's
 * log-ingest worker (lambdas/local/log-ingest-process.ts: the child process it forks, fed over IPC)
 * against a DynamoDB Local of its own (in memory), in batches of BENCH_INGEST_BATCH events (default
 * 100) carried by messages of BENCH_INGEST_PER_MESSAGE events (default 10, as the gateway packs
 * them). Two workloads: `uniform` (one workspace, key and model, as the bench's gateway traffic)
 * and `mixed` (test/support's synthetic events: models, providers, statuses, keys, configs and
 * prompts drawn at random, so nearly every event is a rollup combination of its own).
 * BENCH_INGEST_WORKLOADS=uniform runs one of them. Prints one JSON document: items written per log (log items, pointers, markers and rollup
 * updates) and requests per log, counted on the table's side by a proxy in front of DynamoDB Local
 * (whatever client the worker uses), and CPU per log in microseconds of the worker process and of
 * DynamoDB Local's JVM (/proc/<pid>/stat utime + stime of each).
 */
import { execSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startDynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { startLogIngestProcess } from '../../lambdas/local/log-ingest-process.ts';
import type { LogEvent } from '../../layers/core/src/observability/log-event.ts';
import { newLogId } from '../../layers/core/src/observability/log-id.ts';
import type { LogQueueMessage } from '../../layers/core/src/observability/messages.ts';
import { startTableProxy } from '../support/table-proxy.ts';
import type { Queue, QueueMessage } from '../../layers/core/src/ports/queue.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { syntheticEvents } from '../support/observability.ts';

const N = Number(process.env.BENCH_INGEST_EVENTS ?? 5_000);
const BATCH = Number(process.env.BENCH_INGEST_BATCH ?? 100);
const PER_MESSAGE = Number(process.env.BENCH_INGEST_PER_MESSAGE ?? 10);
const WARMUP = Number(process.env.BENCH_INGEST_WARMUP ?? 2_000);
const TABLE = 'gantry-bench-ingest';
const log = (msg: string) => process.stderr.write(`[bench:ingest] ${msg}\n`);

const TICK_US = 1e6 / Number(execSync('getconf CLK_TCK').toString().trim() || 100);

/** utime + stime of a process, in microseconds. */
function processCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat(5), counted from the state (field 3).
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

/** A gateway request's log as the bench's traffic makes it: one key, one model, small bodies. */
function uniformEvents(n: number, ws: string, start: number): LogEvent[] {
  return Array.from({ length: n }, (_, i) => {
    const started = start + i;
    return {
      v: 1,
      id: newLogId(started),
      source: 'gateway',
      organisation_id: 'org-bench',
      workspace_id: ws,
      created_at: new Date(started).toISOString(),
      started_ms: started,
      trace_id: randomUUID(),
      span_id: null,
      parent_span_id: null,
      span_name: null,
      api_key_id: 'key-bench',
      key_user_id: 'user-bench',
      config_id: null,
      config_source: 'headers',
      provider: 'openai',
      ai_service: 'openai',
      model: 'gpt-4o-mini',
      endpoint: 'chatComplete',
      method: 'POST',
      path: '/v1/chat/completions',
      stream: false,
      status_code: 200,
      is_success: true,
      error_code: null,
      error_message: null,
      total_ms: 3 + (i % 7),
      upstream_ms: 2,
      ttft_ms: null,
      prompt_tokens: 12,
      completion_tokens: 9,
      total_tokens: 21,
      cached_tokens: 0,
      reasoning_tokens: 0,
      cost_micros: 9,
      cache_savings_micros: 0,
      cache_status: 'DISABLED',
      retries: 0,
      last_used_option_index: null,
      fallback: false,
      cancelled: false,
      metadata: {},
      user: null,
      prompt_slug: null,
      organisation: null,
      environment: null,
      request_body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hello ${i}` }] },
      request_bytes: 80,
      response_body: {
        id: `chatcmpl-${i}`,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!' }, finish_reason: 'stop' }],
      },
      response_bytes: 180,
    } satisfies LogEvent;
  });
}

function mixedEvents(n: number, ws: string, start: number): LogEvent[] {
  return syntheticEvents(n, { start, spanMs: Math.max(1, n), workspaceId: ws, seed: 3 }).map((e) => ({ ...e, id: newLogId(e.started_ms) }));
}

interface Counts {
  writeRequests: number;
  readRequests: number;
  itemsWritten: number;
  itemsRead: number;
}

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

/** DynamoDB Local behind a proxy that counts what it is asked, as the table would bill it. */
async function countingProxy(target: string, counts: Counts): Promise<{ url: string; close: () => void }> {
  const proxy = await startTableProxy(target);
  proxy.observe = ({ operation, body }) => {
    const input = JSON.parse(body || '{}') as { RequestItems?: Record<string, unknown[] | { Keys: unknown[] }> };
    if (operation === 'BatchWriteItem') {
      counts.writeRequests++;
      counts.itemsWritten += Object.values(input.RequestItems ?? {}).reduce<number>((n, r) => n + (r as unknown[]).length, 0);
    } else if (WRITES.has(operation)) {
      counts.writeRequests++;
      counts.itemsWritten++;
    } else if (operation === 'BatchGetItem') {
      counts.readRequests++;
      counts.itemsRead += Object.values(input.RequestItems ?? {}).reduce<number>((n, r) => n + (r as { Keys: unknown[] }).Keys.length, 0);
    } else {
      counts.readRequests++;
      counts.itemsRead++;
    }
  };
  return { url: proxy.url, close: () => void proxy.close() };
}

const ddb = await startDynamoDBLocal({ dataDir: ':memory:' });
const counts: Counts = { writeRequests: 0, readRequests: 0, itemsWritten: 0, itemsRead: 0 };
const proxy = await countingProxy(ddb.endpoint, counts);
const requeued: LogQueueMessage[] = [];
const queue: Queue<LogQueueMessage> = { send: async (b) => void requeued.push(b), sendBatch: async (bs) => void requeued.push(...bs) };
const worker = startLogIngestProcess({
  env: {
    TABLE_NAME: TABLE,
    DYNAMODB_ENDPOINT: proxy.url,
    AWS_REGION: 'local',
    LOG_LEVEL: 'SILENT',
    PATH: process.env.PATH,
    // `--cpu-prof --cpu-prof-dir=...` profiles the worker.
    ...(process.env.BENCH_INGEST_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_INGEST_NODE_OPTIONS } : {}),
  },
  requeue: queue,
});
try {
  const client = new DynamoDBClient({ endpoint: ddb.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await ensureTable(client, TABLE);
  client.destroy();

  let seq = 0;
  const batches = (events: readonly LogEvent[]): QueueMessage<LogQueueMessage>[][] => {
    const out: QueueMessage<LogQueueMessage>[][] = [];
    for (let i = 0; i < events.length; i += BATCH) {
      const batch: QueueMessage<LogQueueMessage>[] = [];
      const slice = events.slice(i, i + BATCH);
      for (let j = 0; j < slice.length; j += PER_MESSAGE) {
        const part = slice.slice(j, j + PER_MESSAGE);
        const body: LogQueueMessage = part.length === 1 ? { kind: 'log', event: part[0] as LogEvent } : { kind: 'logs', events: part };
        batch.push({ id: `m${++seq}`, body, attempts: 1 });
      }
      out.push(batch);
    }
    return out;
  };
  // One batch at a time, as the local queue hands them to the worker.
  const run = async (events: readonly LogEvent[]) => {
    let failed = 0;
    for (const batch of batches(events)) failed += (await worker.consumer(batch)).length;
    return failed;
  };

  const now = Math.floor(Date.now() / 60_000) * 60_000 - 10 * 60_000;
  log(`warming up with ${WARMUP} events`);
  await run(uniformEvents(WARMUP, 'ws-warmup', now - 60 * 60_000));
  const pid = worker.pid() as number;

  const workloads = { uniform: uniformEvents, mixed: mixedEvents } as const;
  const results: Record<string, unknown> = {};
  const only = process.env.BENCH_INGEST_WORKLOADS?.split(',');
  for (const [name, make] of Object.entries(workloads).filter(([name]) => !only || only.includes(name))) {
    const events = make(N, `ws-${name}`, now);
    Object.assign(counts, { writeRequests: 0, readRequests: 0, itemsWritten: 0, itemsRead: 0 });
    requeued.length = 0;
    const jvm0 = processCpuUs(ddb.pid);
    const worker0 = processCpuUs(pid);
    const t0 = performance.now();
    const failed = await run(events);
    const wallMs = performance.now() - t0;
    const workerUs = processCpuUs(pid) - worker0;
    const jvmUs = processCpuUs(ddb.pid) - jvm0;
    const per = (x: number) => Math.round((x / N) * 1000) / 1000;
    results[name] = {
      events: N,
      batch_events: BATCH,
      events_per_message: PER_MESSAGE,
      failed_messages: failed,
      requeued_messages: requeued.length,
      items_written_per_log: per(counts.itemsWritten),
      write_requests_per_log: per(counts.writeRequests),
      read_requests_per_log: per(counts.readRequests),
      items_read_per_log: per(counts.itemsRead),
      worker_cpu_us_per_log: Math.round(workerUs / N),
      jvm_cpu_us_per_log: Math.round(jvmUs / N),
      worker_plus_jvm_us_per_log: Math.round((workerUs + jvmUs) / N),
      logs_per_s: Math.round(N / (wallMs / 1000)),
    };
    log(`${name}: ${JSON.stringify(results[name])}`);
  }
  process.stdout.write(`${JSON.stringify({ bench: 'ingest', ...results }, null, 2)}\n`);
} finally {
  await worker.close();
  proxy.close();
  await ddb.stop();
}
