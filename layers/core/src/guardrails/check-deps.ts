/**
 * What checks may use from outside (kernel/guardrails.ts `CheckDeps`): outbound HTTP through the gateway's
 * upstream client, so every URL and every redirect hop is checked like a custom host's (URL text,
 * resolved address, connected address; GW_TRUSTED_CUSTOM_HOSTS), the whole call, body included,
 * is bounded by `timeoutMs`, and a body over `maxBytes` is refused from its Content-Length or as
 * soon as the bytes read pass it. Failures are `CheckFetchError`s that say which limit was hit.
 */
import type { Upstream, UpstreamResponse } from '../ports/upstream.ts';
import { readCapped } from '../http/node-streams.ts';
import type { Clock } from '../ports/clock.ts';
import { BlockedAddressError, parseOutboundUrl, type TrustedHosts } from '../security/ssrf.ts';
import type { CheckDeps } from '../kernel/guardrails.ts';

export const DEFAULT_CHECK_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_BYTES = 20 * 1024 * 1024;
const MAX_REDIRECTS = 5;

/** A check's outbound call failed (timeout, size, refused address, network). */
export class CheckFetchError extends Error {
  readonly kind: 'timeout' | 'too_large' | 'blocked' | 'network';
  constructor(kind: CheckFetchError['kind'], message: string) {
    super(message);
    this.name = 'CheckFetchError';
    this.kind = kind;
  }
}

type FetchInit = Parameters<CheckDeps['fetch']>[1];

function headerRecord(h: HeadersInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(h).forEach((v, k) => {
    out[k] = v;
  });
  return out;
}

function bodyOf(body: FetchInit['body']): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  throw new CheckFetchError('network', 'check requests carry a string or byte body');
}

async function readBody(res: UpstreamResponse, maxBytes: number, url: URL): Promise<Buffer> {
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    res.body.destroy();
    throw new CheckFetchError('too_large', `${url.host} answered ${declared} bytes, more than the limit of ${maxBytes}`);
  }
  const { bytes, truncated } = await readCapped(res.body, maxBytes);
  if (truncated) throw new CheckFetchError('too_large', `${url.host} sent more than the limit of ${maxBytes} bytes`);
  return bytes;
}

function checkedUrl(raw: string, trusted: TrustedHosts): URL {
  try {
    return parseOutboundUrl(raw, 'url', trusted);
  } catch (err) {
    throw new CheckFetchError('blocked', `${raw.slice(0, 200)}: ${err instanceof Error ? err.message.replace(/^url: /, '') : 'refused'}`);
  }
}

/** The guarded fetch of `CheckDeps`, on the gateway's upstream client. */
export function guardedFetch(upstream: Upstream, trusted: TrustedHosts): CheckDeps['fetch'] {
  return async (raw, init) => {
    const timeoutMs = init.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
    const maxBytes = init.maxBytes ?? DEFAULT_MAX_BYTES;
    const abort = new AbortController();
    const outer = init.signal ?? undefined;
    const onOuter = () => abort.abort();
    if (outer?.aborted) abort.abort();
    outer?.addEventListener('abort', onOuter, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, timeoutMs);
    try {
      return await follow(upstream, trusted, raw, init, abort.signal, maxBytes);
    } catch (err) {
      if (timedOut) throw new CheckFetchError('timeout', `no complete answer within ${timeoutMs} ms`);
      if (err instanceof CheckFetchError) throw err;
      const message = err instanceof Error ? err.message : String(err);
      // Refused where the socket connected (a private address, or this service's own port).
      throw new CheckFetchError(err instanceof BlockedAddressError ? 'blocked' : 'network', message);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    }
  };
}

async function follow(upstream: Upstream, trusted: TrustedHosts, raw: string, init: FetchInit, signal: AbortSignal, maxBytes: number): Promise<Response> {
  let url = checkedUrl(raw, trusted);
  let method = (init.method ?? 'GET').toUpperCase();
  let body = bodyOf(init.body);
  const headers = headerRecord(init.headers);
  for (let hop = 0; ; hop++) {
    const res = await upstream.send({ url, method, headers, body, signal });
    const location = res.headers.location;
    if (res.status >= 300 && res.status < 400 && typeof location === 'string') {
      res.body.resume();
      if (hop >= MAX_REDIRECTS) throw new CheckFetchError('network', `more than ${MAX_REDIRECTS} redirects`);
      url = checkedUrl(new URL(location, url).href, trusted);
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        delete headers['content-type'];
      }
      continue;
    }
    const onAbort = () => res.body.destroy(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const bytes = await readBody(res, maxBytes, url);
      const out = new Headers();
      for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') out.set(k, v);
      const empty = res.status === 204 || res.status === 304 || method === 'HEAD';
      return new Response(empty ? null : new Uint8Array(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.length), { status: res.status, headers: out });
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

/** The dependencies checks get: the guarded fetch and the service clock. */
export function createCheckDeps(upstream: Upstream, trusted: TrustedHosts, clock: Clock): CheckDeps {
  return { fetch: guardedFetch(upstream, trusted), now: () => clock.now() };
}
