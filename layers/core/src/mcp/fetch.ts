/**
 * The `fetch` the MCP SDK's client transports use to reach an upstream MCP server: every call goes
 * through the gateway's upstream client, so the URL, the resolved address and the connected address
 * are checked like a custom host's (security/ssrf.ts, GW_TRUSTED_CUSTOM_HOSTS). Bodies stream (an
 * SSE answer or the legacy transport's event stream must not be buffered). Redirects are not
 * followed: an MCP endpoint that redirects answers its 3xx to the client, which fails.
 */
import { Readable } from 'node:stream';
import type { Upstream } from '../ports/upstream.ts';
import { parseOutboundUrl, type TrustedHosts } from '../security/ssrf.ts';

export type McpFetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

function headerRecord(h: HeadersInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(h).forEach((v, k) => {
    out[k] = v;
  });
  return out;
}

export function guardedMcpFetch(upstream: Upstream, trusted: TrustedHosts): McpFetch {
  return async (input, init = {}) => {
    const url = parseOutboundUrl(input instanceof URL ? input.href : input, 'url', trusted);
    const method = (init.method ?? 'GET').toUpperCase();
    const body = init.body;
    if (body !== undefined && body !== null && typeof body !== 'string') throw new TypeError('MCP requests carry a string body');
    const res = await upstream.send({ url, method, headers: headerRecord(init.headers), body: body ?? undefined, signal: init.signal ?? undefined });
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (typeof v === 'string') headers.set(k, v);
      else if (Array.isArray(v)) for (const one of v) headers.append(k, one);
    }
    const empty = res.status === 204 || res.status === 304 || method === 'HEAD';
    if (empty) res.body.resume();
    const stream = empty ? null : (Readable.toWeb(res.body) as ReadableStream<Uint8Array>);
    return new Response(stream, { status: res.status, headers });
  };
}
