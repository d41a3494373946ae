/**
 * Outbound HTTP to secret managers (Vault, Key Vault, the Entra token endpoint) through the guarded
 * fetch of guardrail checks: every URL and redirect hop passes the SSRF guard (a manager on a
 * private address needs GW_TRUSTED_CUSTOM_HOSTS), and the whole call has a deadline.
 */
import { CheckFetchError, guardedFetch } from '../guardrails/check-deps.ts';
import type { Upstream } from '../ports/upstream.ts';
import type { TrustedHosts } from '../security/ssrf.ts';
import { SecretManagerError } from '../ports/secret-managers.ts';

export interface JsonAnswer {
  status: number;
  json: unknown;
}

export type JsonCall = (
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal | undefined },
) => Promise<JsonAnswer>;

/** A manager answer is small: anything over this is not one. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export function managerHttp(upstream: Upstream, trusted: TrustedHosts, timeoutMs: number): JsonCall {
  const fetch = guardedFetch(upstream, trusted);
  return async (url, init) => {
    let res: Response;
    try {
      res = await fetch(url, {
        method: init.method ?? 'GET',
        headers: init.headers,
        body: init.body,
        signal: init.signal,
        timeoutMs,
        maxBytes: MAX_ANSWER_BYTES,
      });
    } catch (err) {
      if (err instanceof CheckFetchError) {
        const host = hostOf(url);
        if (err.kind === 'blocked') throw new SecretManagerError('rejected', `${host} is refused by the SSRF guard (trust it in GW_TRUSTED_CUSTOM_HOSTS)`);
        throw new SecretManagerError('unavailable', `${host} could not be reached (${err.kind})`);
      }
      throw err;
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, json };
  };
}

export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the manager';
  }
}

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Tokens by a key, until shortly before they expire. */
export class TokenCache {
  readonly #tokens = new Map<string, { token: string; until: number }>();
  get(key: string, now: number): string | undefined {
    const hit = this.#tokens.get(key);
    return hit && hit.until > now ? hit.token : undefined;
  }
  set(key: string, token: string, now: number, lifetimeSeconds: number): void {
    // A minute early (or at half life for short tokens), so no request carries an expiring token.
    const margin = Math.min(60_000, (lifetimeSeconds * 1000) / 2);
    if (this.#tokens.size > 1_000) this.#tokens.clear();
    this.#tokens.set(key, { token, until: now + lifetimeSeconds * 1000 - margin });
  }
  drop(key: string): void {
    this.#tokens.delete(key);
  }
}

/**
 * Calls with a cached token; when the answer says the token is refused, drops it and calls once
 * more with a new one (a token revoked or expired before its stated lifetime). `key` undefined:
 * a static token, nothing to renew.
 */
export async function callWithToken(
  tokens: TokenCache,
  key: string | undefined,
  token: () => Promise<string>,
  call: (token: string) => Promise<JsonAnswer>,
  refused: (status: number) => boolean,
): Promise<JsonAnswer> {
  const first = await call(await token());
  if (key === undefined || !refused(first.status)) return first;
  tokens.drop(key);
  return call(await token());
}
