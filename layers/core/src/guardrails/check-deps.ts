/**
 * What checks may use from outside (contract.ts `CheckDeps`): outbound HTTP through the gateway's
 * upstream client, so every address connected to is checked like a custom host's, every redirect
 * hop is checked again before it is followed, and answers are bounded in time and size.
 */
import { readCapped } from '../http/node-streams.ts';
import type { Clock } from '../ports/clock.ts';
import { parseOutboundUrl, type TrustedHosts } from '../security/ssrf.ts';
import type { UpstreamClient } from '../gateway/upstream.ts';
import type { CheckDeps } from './contract.ts';

const MAX_REDIRECTS = 3;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_BYTES = 10 << 20;

function headerRecord(init: HeadersInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(init).forEach((value, name) => (out[name] = value));
  return out;
}

export function createCheckDeps(upstream: UpstreamClient, trusted: TrustedHosts, clock: Clock): CheckDeps {
  return {
    now: () => clock.now(),
    async fetch(url, init) {
      let target = parseOutboundUrl(url, 'url', trusted);
      const body = typeof init.body === 'string' || init.body instanceof Uint8Array ? init.body : undefined;
      for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
        const res = await upstream.send({
          url: target,
          method: init.method ?? 'GET',
          headers: headerRecord(init.headers),
          body,
          timeoutMs: init.timeoutMs ?? DEFAULT_TIMEOUT_MS,
          signal: init.signal ?? undefined,
        });
        const location = res.headers.location;
        if (res.status >= 300 && res.status < 400 && typeof location === 'string') {
          res.body.destroy();
          target = parseOutboundUrl(new URL(location, target).href, 'url', trusted);
          continue;
        }
        const max = init.maxBytes ?? DEFAULT_MAX_BYTES;
        const { bytes, truncated } = await readCapped(res.body, max);
        if (truncated) throw new Error(`the answer from ${target.host} is larger than ${max} bytes`);
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') headers.set(name, value);
        return new Response(new Uint8Array(bytes), { status: res.status, headers });
      }
      throw new Error(`more than ${MAX_REDIRECTS} redirects from ${url}`);
    },
  };
}
