/**
 * The upstream's answers with the allow-list applied: a listing's result (answered as JSON or as
 * an SSE message) keeps only the allowed entries. Only the responses to this request's listing
 * requests are parsed; every other byte passes as it came, and SSE events go on as soon as each
 * one is complete.
 */
import type { ChunkRewriter } from '../../http/node-streams.ts';
import { filterListing, type AllowList } from './allow.ts';
import type { JsonRpcId, JsonRpcMessage } from './jsonrpc.ts';

/** The listing requests of one HTTP request: id to method. */
export type PendingListings = ReadonlyMap<JsonRpcId, string>;

function filterMessage(m: JsonRpcMessage, pending: PendingListings, allowed: AllowList): JsonRpcMessage {
  if (!('result' in m) || (typeof m.id !== 'string' && typeof m.id !== 'number')) return m;
  const method = pending.get(m.id);
  return method ? { ...m, result: filterListing(method, m.result, allowed) } : m;
}

/** A JSON answer (one message or a batch), filtered; `extra` (refusals made here) joins a batch. */
export function filterJsonAnswer(text: string, pending: PendingListings, allowed: AllowList, extra: readonly JsonRpcMessage[]): string {
  if (pending.size === 0 && extra.length === 0) return text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  const list = Array.isArray(value) ? (value as JsonRpcMessage[]) : [value as JsonRpcMessage];
  const filtered = list.map((m) => (typeof m === 'object' && m !== null ? filterMessage(m, pending, allowed) : m));
  if (extra.length > 0) return JSON.stringify([...extra, ...filtered]);
  return JSON.stringify(Array.isArray(value) ? filtered : filtered[0]);
}

/** One SSE message event carrying a JSON-RPC message. */
export const sseMessage = (m: JsonRpcMessage): string => `event: message\ndata: ${JSON.stringify(m)}\n\n`;

const BOUNDARY = /\r?\n\r?\n/;

/** Rewrites one complete event when it answers a listing; otherwise returns it unchanged. */
function rewriteEvent(event: string, pending: PendingListings, allowed: AllowList): string {
  const lines = event.split(/\r?\n/);
  const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(l.startsWith('data: ') ? 6 : 5));
  if (data.length === 0) return event;
  let m: unknown;
  try {
    m = JSON.parse(data.join('\n'));
  } catch {
    return event;
  }
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return event;
  const filtered = filterMessage(m as JsonRpcMessage, pending, allowed);
  if (filtered === m) return event;
  return [...lines.filter((l) => !l.startsWith('data:')), `data: ${JSON.stringify(filtered)}`].join('\n');
}

/** An SSE stream, event by event, with listings filtered; `prefix` events (refusals) go first. */
export function sseFilter(pending: PendingListings, allowed: AllowList, prefix: readonly JsonRpcMessage[]): ChunkRewriter {
  const decoder = new TextDecoder();
  let head = prefix.map(sseMessage).join('');
  let buffer = '';
  return {
    push(chunk) {
      buffer += decoder.decode(chunk, { stream: true });
      let out = head;
      head = '';
      for (let match = BOUNDARY.exec(buffer); match; match = BOUNDARY.exec(buffer)) {
        out += rewriteEvent(buffer.slice(0, match.index), pending, allowed) + match[0];
        buffer = buffer.slice(match.index + match[0].length);
      }
      return out;
    },
    end() {
      const rest = head + buffer + decoder.decode();
      buffer = head = '';
      return rest;
    },
  };
}
