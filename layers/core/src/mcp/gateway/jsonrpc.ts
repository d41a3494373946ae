/**
 * JSON-RPC 2.0 messages as the MCP gateway reads them: only what policy needs (the method, the
 * id, the name a call targets) is looked at; everything else passes on unchanged in meaning (the
 * messages are serialised again, so what the server reads is what was checked).
 */
import { duplicateKey } from './duplicate-keys.ts';

export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcError {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  error: { code: number; message: string };
}

/** Any message: a request, a notification, a response (result or error). */
export type JsonRpcMessage = Record<string, unknown>;

/** JSON-RPC's own codes (the MCP SDK answers an unknown tool with INVALID_PARAMS too). */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A request expects an answer: it has a method and an id. Notifications and responses do not. */
export function asRequest(m: JsonRpcMessage): JsonRpcRequest | undefined {
  if (typeof m.method !== 'string') return undefined;
  if (typeof m.id !== 'string' && typeof m.id !== 'number') return undefined;
  return { jsonrpc: '2.0', id: m.id, method: m.method, ...(isObject(m.params) ? { params: m.params } : {}) };
}

export const rpcError = (id: JsonRpcId | null, code: number, message: string): JsonRpcError => ({ jsonrpc: '2.0', id, error: { code, message } });

/**
 * The body as a list of messages, or a JSON-RPC error to answer (400): not JSON, an object with a
 * key twice (the gateway and the server could each read a different one), not an object or array
 * of objects. What is sent on is these messages serialised again, never the client's text.
 */
export function parseMessages(text: string): { messages: JsonRpcMessage[]; batch: boolean } | JsonRpcError {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return rpcError(null, PARSE_ERROR, 'Parse error: the body is not valid JSON');
  }
  const repeated = duplicateKey(text);
  if (repeated !== undefined) {
    const shown = repeated.length > 64 ? `${repeated.slice(0, 64)}...` : repeated;
    return rpcError(null, INVALID_REQUEST, `Invalid request: the key ${JSON.stringify(shown)} appears more than once in one object`);
  }
  const batch = Array.isArray(value);
  const list: unknown[] = batch ? (value as unknown[]) : [value];
  if (list.length === 0) return rpcError(null, INVALID_REQUEST, 'Invalid request: an empty batch');
  if (!list.every(isObject)) return rpcError(null, INVALID_REQUEST, 'Invalid request: every message must be a JSON-RPC object');
  const messages = list as JsonRpcMessage[];
  if (messages.some((m) => m.jsonrpc !== '2.0')) return rpcError(null, INVALID_REQUEST, 'Invalid request: jsonrpc must be "2.0"');
  return { messages, batch };
}
