/** Retry timing: exponential backoff with jitter, and the Retry-After family of headers. */
import type { IncomingHttpHeaders } from 'node:http';

export const DEFAULT_RETRY_STATUS_CODES: readonly number[] = [429, 500, 502, 503, 504];
export const MAX_RETRY_ATTEMPTS = 5;
/** Total time a request may spend waiting on Retry-After headers. */
export const RETRY_AFTER_BUDGET_MS = 60_000;
const BASE_DELAY_MS = 1_000;

/** 1 s, 2 s, 4 s ... each scaled by a random factor in [0.75, 1.25) so clients do not retry in step. */
export function backoffDelay(retryIndex: number, random: () => number): number {
  return Math.round(BASE_DELAY_MS * 2 ** retryIndex * (0.75 + random() * 0.5));
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The wait a provider asked for, in ms: `retry-after-ms`, `x-ms-retry-after-ms` or `retry-after`. */
export function retryAfterMs(headers: IncomingHttpHeaders, nowMs: number): number | undefined {
  for (const name of ['retry-after-ms', 'x-ms-retry-after-ms']) {
    const v = Number(first(headers[name]));
    if (first(headers[name]) !== undefined && Number.isFinite(v) && v >= 0) return Math.ceil(v);
  }
  const raw = first(headers['retry-after'])?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.ceil(Number(raw) * 1000);
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
