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

/** The gateway Lambda handler's figures (lambda-handler.ts), per warm invocation. */
export interface LambdaMessage {
  type: 'lambda';
  requests: number;
  statuses: number[];
  cpu_ms_per_request: number;
  cpu_user_ms_per_request: number;
  wall_ms_per_request: number;
  rss_mb: number;
  heap_used_mb: number;
  max_rss_mb: number;
  /** DynamoDB writes the handler made (the limit counter), and their estimated write units. */
  gateway_writes_per_request: { requests: number; units: number };
  /** The log ingest's writes for the same requests' events. */
  log_ingest_writes_per_request: { requests: number; units: number };
}

export type ChildMessage = ReadyMessage | RssMessage | LimitsMessage | IngestMessage | DynamoCallsMessage | LambdaMessage;

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
  return (
    typeof m === 'object' &&
    m !== null &&
    'type' in m &&
    (m.type === 'ready' || m.type === 'rss' || m.type === 'limits' || m.type === 'ingest' || m.type === 'dynamodb' || m.type === 'lambda')
  );
}
