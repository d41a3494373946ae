/**
 * The passthrough: any `/v1/<path>` no route serves goes to the provider as `{base}/<path>`, with
 * its method, query string, body bytes and headers (but no gateway header or key), through the
 * same pipeline as every endpoint (auth, routing, SSRF checks, record and hooks); the provider's
 * answer comes back exactly as sent. It runs as the app's fallback, after every route of every
 * module, and leaves admin paths (and near-misses of them, `/v1/config`) and /v1/health to their 404.
 *
 * It never serves a path a unified route owns: a variant of one (another case, repeated or
 * trailing slashes, percent-encoding, an encoded slash, `;` parameters) is refused with a 400
 * naming the canonical path, as a lenient provider might serve it as that endpoint without the
 * validation, limits and guardrails the route runs.
 */
import type { CoreDeps } from '../deps.ts';
import type { Fallback } from '../http/route-module.ts';
import { isAdminPath, surfaceOf } from '../http/surfaces.ts';
import type { RuntimeBindings } from '../http/bodies.ts';
import { toResponse } from '../http/error-response.ts';
import { ValidationError } from '../http/errors.ts';
import type { EndpointSpec, HttpMethod } from './endpoint.ts';
import { pathOwner, type OwnedPath } from './paths.ts';
import { handleGatewayRequest } from './pipeline.ts';

const METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

const SPECS: ReadonlyMap<string, EndpointSpec> = new Map(
  METHODS.map((method) => [method, { endpoint: 'proxy', method, body: method === 'GET' ? 'none' : 'raw', stream: true }]),
);

const RESERVED = /^\/v1\/health\/?$/;

function nonCanonical(method: string, path: string, canonical: string): ValidationError {
  return new ValidationError(
    [
      {
        path: 'path',
        message: `${path} is a variant of the gateway endpoint ${method} ${canonical}, which the passthrough never serves: send the request to ${canonical}`,
      },
    ],
    { openaiCode: 'non_canonical_path' },
  );
}

/** `owned`: every path a unified route serves, which the passthrough refuses in any spelling. */
export function passthrough(deps: CoreDeps, owned: readonly OwnedPath[]): Fallback {
  const ownerOf = pathOwner(owned);
  return (c) => {
    const path = c.req.path;
    if (!path.startsWith('/v1/') || path.length === 4 || RESERVED.test(path) || isAdminPath(path)) return undefined;
    const spec = SPECS.get(c.req.method);
    if (!spec) return undefined;
    const canonical = ownerOf(spec.method, path);
    if (canonical !== undefined) return toResponse(nonCanonical(spec.method, path, canonical), 'gateway');
    // Slips of admin paths (`/v1/config`) are the admin API's 404, naming the path meant (http/surfaces.ts).
    if (surfaceOf(path) === 'admin') return undefined;
    return handleGatewayRequest(spec, c.req.raw, deps, c.env as RuntimeBindings | undefined, { proxyPath: path.slice(3) });
  };
}
