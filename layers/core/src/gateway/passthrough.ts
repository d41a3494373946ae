/**
 * The passthrough: any `/v1/<path>` no route serves goes to the provider as `{base}/<path>`, with
 * its method, query string, body bytes and headers (but no gateway header or key), through the
 * same pipeline as every endpoint (auth, routing, SSRF checks, record and hooks); the provider's
 * answer comes back exactly as sent. It runs as the app's fallback, after every route of every
 * module, and leaves admin paths and /v1/health to their 404.
 */
import type { CoreDeps } from '../deps.ts';
import { isAdminPath, type Fallback } from '../http/app.ts';
import type { RuntimeBindings } from '../http/bodies.ts';
import type { EndpointSpec, HttpMethod } from './endpoint.ts';
import { handleGatewayRequest } from './pipeline.ts';

const METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

const SPECS: ReadonlyMap<string, EndpointSpec> = new Map(
  METHODS.map((method) => [method, { endpoint: 'proxy', method, body: method === 'GET' ? 'none' : 'raw', stream: true }]),
);

const RESERVED = /^\/v1\/health\/?$/;

export function passthrough(deps: CoreDeps): Fallback {
  return (c) => {
    const path = c.req.path;
    if (!path.startsWith('/v1/') || path.length === 4 || RESERVED.test(path) || isAdminPath(path)) return undefined;
    const spec = SPECS.get(c.req.method);
    if (!spec) return undefined;
    return handleGatewayRequest(spec, c.req.raw, deps, c.env as RuntimeBindings | undefined, { proxyPath: path.slice(3) });
  };
}
