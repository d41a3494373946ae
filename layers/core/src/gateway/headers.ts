/** Gateway request headers that are not about routing. */
import { ValidationError } from '../http/errors.ts';

const MAX_TIMEOUT_MS = 15 * 60 * 1000;

/** `x-gw-request-timeout`: whole milliseconds, at most 15 minutes. */
export function parseRequestTimeout(headers: Headers): number | undefined {
  const raw = headers.get('x-gw-request-timeout');
  if (raw === null) return undefined;
  const ms = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > MAX_TIMEOUT_MS) {
    throw ValidationError.field('x-gw-request-timeout', `must be a whole number of milliseconds between 1 and ${MAX_TIMEOUT_MS}`);
  }
  return ms;
}
