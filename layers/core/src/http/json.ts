/** Response helpers shared by every route. */
import { textResponse } from './bodies.ts';

export function jsonResponse(body: unknown, status = 200, headers?: Record<string, string>): Response {
  return textResponse(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** A JSON object (not an array, not null). */
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parses a JSON body, or returns `undefined` when it is not valid JSON. */
export function tryParseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}
