/** Messages between the bench (parent) and the servers it runs as child processes, over IPC. */
import { readFileSync } from 'node:fs';
import v8 from 'node:v8';

export const CHAT_PATH = '/v1/chat/completions';

/** A child announces it is listening, and on what. */
export interface ReadyMessage {
  type: 'ready';
  url: string;
  /** Gantry only: a workspace key with completions.write. */
  apiKey?: string;
  /** Gantry only: another such key, matched by one rate limits policy. */
  limitedApiKey?: string;
  /** Gantry only, with BENCH_MCP_URL: the slug of an MCP server that relays to it. */
  mcpSlug?: string;
  /** A key one rate limits policy in approximate mode (leases of 100) matches. */
  approximateApiKey?: string;
}

export interface RssRequest {
  type: 'rss';
}

export interface RssMessage {
  type: 'rss';
  rssMb: number;
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
  /** Peak resident set since the process started (getrusage). */
  maxRssMb: number;
  /** Where the resident memory is: Buffer and ArrayBuffer bytes, V8's young generation (capacity) and old space (capacity), and V8's malloc'd memory. */
  arrayBuffersMb: number;
  newSpaceMb: number;
  oldSpaceMb: number;
  mallocedMb: number;
  /** Resident memory of this process alone (Linux: smaps_rollup Private_*): RSS also counts the node binary's pages, shared with every node process. */
  privateMb?: number;
}

/** Gantry only: limit counter calls made so far (asked with `{type: 'limits'}`). */
export interface LimitsMessage {
  type: 'limits';
  reserves: number;
  adjusts: number;
}

/** Gantry only: the log-ingest worker drained its backlog (asked with `{type: 'ingest'}`). */
export interface IngestMessage {
  type: 'ingest';
  /** Log events written while draining, in how long, and in all so far. */
  written: number;
  ms: number;
  total: number;
  /** Time the worker spent writing, in all: `total` over it is its rate when it has work. */
  busyMs: number;
  /** Whether the queue was empty at the end (draining is bounded in time). */
  drained: boolean;
}

/** Gantry only: its own pid, its DynamoDB Local's (the JVM) and its log-ingest worker's, once started (asked with `{type: 'pids'}`). */
export interface PidsMessage {
  type: 'pids';
  gantry: number;
  dynamodb?: number | undefined;
  ingest?: number | undefined;
}

/** Gantry only: the log-ingest worker's DynamoDB requests so far, as of its last batch (asked with `{type: 'ingest_counts'}`); null before it has one. */
export interface IngestCountsMessage {
  type: 'ingest_counts';
  counts: {
    /** Items written (a BatchWriteItem of 24 puts is 24) and their write units (updates at 1: their size is not known there). */
    writes: number;
    writeUnits: number;
    reads: number;
    readUnits: number;
    /** The worker's own count of logs written, and of batches answered. */
    logsWritten: number;
    batches: number;
  } | null;
}

/** SQS stand-in (sqs-stand-in.ts): the bodies sent to it since the last ask, in order (asked with `{type: 'sqs'}`). */
export interface SqsMessage {
  type: 'sqs';
  bodies: string[];
  /** SendMessageBatch requests taken since the last ask. */
  requests: number;
}

/** Gantry only: DynamoDB HTTP requests so far, by who made them (asked with `{type: 'dynamodb'}`). */
export interface DynamoCallsMessage {
  type: 'dynamodb';
  /** HTTP requests Gantry's server took. */
  requests: number;
  /** Made for a request before its answer ended, after it, by the log-ingest worker, by nothing of those. */
  sync: number;
  after_answer: number;
  log_ingest: number;
  other: number;
  /** The synchronous ones by command. */
  sync_by_operation: Record<string, number>;
}

/** The gateway Lambda handler's figures (lambda-handler.ts) for one key, per warm invocation. */
export interface LambdaKeyFigures {
  invocations: number;
  /** CPU time of the process over the key's invocations / their number, and per invocation (process.cpuUsage() around each). */
  cpu_ms_per_request: number;
  cpu_ms: { p50: number; p99: number; max: number };
  wall_ms: { mean: number; p50: number };
  /** DynamoDB items written and read by the handler (the limit counter, the key cache), and their units. */
  dynamodb_per_request: { writes: number; write_units: number; reads: number; read_units: number };
  /** What the function wrote to stdout: CloudWatch Logs lines (EMF metrics, log lines at LOG_LEVEL=WARN). */
  stdout_per_request: { lines: number; bytes: number };
  response_bytes: number;
}

/** The gateway Lambda handler's figures (lambda-handler.ts), per warm invocation. */
export interface LambdaMessage {
  type: 'lambda';
  /** Invocations per key. */
  requests: number;
  statuses: number[];
  no_policy: LambdaKeyFigures;
  one_policy: LambdaKeyFigures;
  /** Per-invocation CPU over both keys: the bursts. */
  cpu_ms_per_invocation_all: { p99: number; max: number };
  rss_mb: number;
  private_mb: number | null;
  heap_used_mb: number;
  max_rss_mb: number;
  request_bytes: number;
  /** What the handler sent to SQS: SendMessageBatch requests and messages per invocation, and a message's size. */
  sqs: { requests_per_invocation: number; messages_per_invocation: number; bytes_per_message: number };
  /** The log-ingest consumer run on what SQS received, in batches of `batch_size`: per log written. */
  log_ingest: {
    logs: number;
    failed_messages: number;
    batch_size: number;
    invocations: number;
    cpu_ms_per_log: number;
    writes_per_log: number;
    write_units_per_log: number;
    reads_per_log: number;
    read_units_per_log: number;
  };
}

export type ChildMessage =
  | ReadyMessage
  | RssMessage
  | LimitsMessage
  | IngestMessage
  | DynamoCallsMessage
  | LambdaMessage
  | PidsMessage
  | IngestCountsMessage
  | SqsMessage;

const CHILD_MESSAGE_TYPES: ReadonlySet<unknown> = new Set<ChildMessage['type']>([
  'ready',
  'rss',
  'limits',
  'ingest',
  'dynamodb',
  'lambda',
  'pids',
  'ingest_counts',
  'sqs',
]);

export const toMb = (bytes: number): number => Math.round((bytes / (1024 * 1024)) * 10) / 10;

/** A child's answer to `{type: 'rss'}`: its own memory now. */
export function rssReport(): RssMessage {
  const mem = process.memoryUsage();
  const space = (name: string) => toMb(v8.getHeapSpaceStatistics().find((s) => s.space_name === name)?.space_size ?? 0);
  return {
    type: 'rss',
    rssMb: toMb(mem.rss),
    heapUsedMb: toMb(mem.heapUsed),
    heapTotalMb: toMb(mem.heapTotal),
    externalMb: toMb(mem.external),
    maxRssMb: toMb(process.resourceUsage().maxRSS * 1024),
    arrayBuffersMb: toMb(mem.arrayBuffers),
    newSpaceMb: space('new_space'),
    oldSpaceMb: space('old_space'),
    mallocedMb: toMb(v8.getHeapStatistics().malloced_memory),
    ...privateMemory(),
  };
}

function privateMemory(): { privateMb?: number } {
  try {
    const text = readFileSync('/proc/self/smaps_rollup', 'utf8');
    const kb = [...text.matchAll(/^Private_(?:Clean|Dirty):\s+(\d+) kB/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    return { privateMb: toMb(kb * 1024) };
  } catch {
    return {};
  }
}

export function isChildMessage(m: unknown): m is ChildMessage {
  return typeof m === 'object' && m !== null && 'type' in m && CHILD_MESSAGE_TYPES.has(m.type);
}
