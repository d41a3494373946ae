/** Messages between the bench (parent) and the servers it runs as child processes, over IPC. */

export const CHAT_PATH = '/v1/chat/completions';

/** A child announces it is listening, and on what. */
export interface ReadyMessage {
  type: 'ready';
  url: string;
  /** Gantry only: a workspace key with completions.write. */
  apiKey?: string;
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

export type ChildMessage = ReadyMessage | RssMessage;

export const toMb = (bytes: number): number => Math.round((bytes / (1024 * 1024)) * 10) / 10;

export function isChildMessage(m: unknown): m is ChildMessage {
  return typeof m === 'object' && m !== null && 'type' in m && (m.type === 'ready' || m.type === 'rss');
}
