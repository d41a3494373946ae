/** Messages between the bench (parent) and the servers it runs as child processes, over IPC. */

export const CHAT_PATH = '/v1/chat/completions';

/** A child announces it is listening, and on what. */
export interface ReadyMessage {
  type: 'ready';
  url: string;
  /** Gantry only: a workspace key with completions.write. */
  apiKey?: string;
  /** Gantry only: another such key, matched by one rate limits policy. */
  limitedApiKey?: string;
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

export type ChildMessage = ReadyMessage | RssMessage | LimitsMessage | IngestMessage;

export const toMb = (bytes: number): number => Math.round((bytes / (1024 * 1024)) * 10) / 10;

export function isChildMessage(m: unknown): m is ChildMessage {
  return typeof m === 'object' && m !== null && 'type' in m && (m.type === 'ready' || m.type === 'rss' || m.type === 'limits' || m.type === 'ingest');
}
