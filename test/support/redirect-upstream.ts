/**
 * An UpstreamClient that sends every provider request to one local mock server instead of the
 * provider's host, keeping the method, path, query, headers and body, and telling the mock where
 * the request was meant to go in `x-original-url` (scheme, host, path and query). Provider tests
 * use it to check the exact URL a declaration produces without reaching the real hosts.
 */
import { UpstreamClient, type UpstreamRequest, type UpstreamResponse } from '../../layers/core/src/gateway/upstream.ts';
import { TrustedHosts } from '../../layers/core/src/security/ssrf.ts';

export const ORIGINAL_URL_HEADER = 'x-original-url';

export class RedirectingUpstream extends UpstreamClient {
  /** The mock's origin, e.g. `http://127.0.0.1:53121`; settable after the mock starts. */
  target = '';

  constructor(target = '') {
    super(TrustedHosts.parse('127.0.0.1,localhost'));
    this.target = target;
  }

  override send(req: UpstreamRequest): Promise<UpstreamResponse> {
    if (!this.target) throw new Error('RedirectingUpstream: no target set');
    const original = req.url;
    const url = new URL(original.pathname + original.search, this.target);
    return super.send({ ...req, url, headers: { ...req.headers, [ORIGINAL_URL_HEADER]: original.href } });
  }
}
