/**
 * Calls to an MCP server: through the gateway's SSRF-guarded client (the URL text checked first,
 * then every address resolved and connected to), with the integration's credentials: static
 * headers, or the user's OAuth connection, refreshed once when the server answers 401.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { CoreDeps } from '../../deps.ts';
import { AuthenticationError, GantryError, UpstreamError } from '../../http/errors.ts';
import type { GatewayPrincipal } from '../../gateway/access.ts';
import type { UpstreamResponse } from '../../gateway/upstream.ts';
import { parseOutboundUrl } from '../../security/ssrf.ts';
import { getUserConnection, type McpConnection, type McpRoute } from '../../store/mcp.ts';
import { refreshConnection } from './oauth.ts';

/** Waiting for an MCP server's answer headers; a started stream is never cut by it. */
const HEADERS_TIMEOUT_MS = 60_000;

export interface Outbound {
  method: 'POST' | 'GET' | 'DELETE';
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal | undefined;
}

/** Checked URLs per cached route: a route object lives for the cache TTL, and its URL with it. */
const checked = new WeakMap<McpRoute, URL>();

/** The server's URL, refused before any connection when it names a private, internal or metadata host. */
export function upstreamUrl(route: McpRoute, deps: CoreDeps): URL {
  const hit = checked.get(route);
  if (hit) return hit;
  try {
    const url = parseOutboundUrl(route.upstream.url, 'url', deps.trustedHosts);
    checked.set(route, url);
    return url;
  } catch (err) {
    throw new UpstreamError(502, `The MCP server's URL is not allowed: ${err instanceof Error ? err.message : 'refused'}`);
  }
}

export async function send(deps: CoreDeps, url: URL, out: Outbound, auth: Record<string, string>): Promise<UpstreamResponse> {
  try {
    return await deps.upstream.send({
      url,
      method: out.method,
      headers: { ...out.headers, ...auth },
      body: out.body,
      timeoutMs: HEADERS_TIMEOUT_MS,
      signal: out.signal,
    });
  } catch (err) {
    // A blocked address is the integration's, not the caller's input: a gateway failure, not a 400.
    if (err instanceof GantryError && err.status === 400) throw new UpstreamError(502, `The MCP server at ${url.host} cannot be reached: ${err.message}`);
    throw err;
  }
}

const bearer = (c: McpConnection): Record<string, string> => ({ authorization: `Bearer ${c.tokens.access_token}` });

/**
 * Sends the call with the integration's credentials. For an OAuth integration, a 401 from the
 * server is answered by one refresh with the stored refresh token and one retry; when that fails
 * the server's own 401 (and its `WWW-Authenticate` challenge) is what the client gets.
 */
export async function sendWithCredentials(deps: CoreDeps, route: McpRoute, principal: GatewayPrincipal, out: Outbound): Promise<UpstreamResponse> {
  const url = upstreamUrl(route, deps);
  const { authType, headers } = route.upstream;
  if (authType === 'none') return send(deps, url, out, {});
  if (authType === 'headers') return send(deps, url, out, headers);
  const userId = principal.userId;
  const store = { table: deps.repos.table, cipher: deps.cipher };
  const conn = userId ? await getUserConnection(store, route.server.organisationId, route.server.id, userId) : undefined;
  if (!conn)
    throw new AuthenticationError(`No OAuth connection to the MCP server ${route.server.slug} for this user: connect to it first`, {
      openaiCode: 'mcp_connection_required',
    });
  const first = await send(deps, url, out, bearer(conn));
  if (first.status !== 401 || !conn.tokens.refresh_token) return first;
  const refreshed = await refreshConnection(deps, route, conn, challengeOf(first.headers)).catch((err: unknown) => {
    deps.logger.warn('mcp token refresh failed', { server: route.server.id, error: err instanceof Error ? err.message : 'unknown' });
    return undefined;
  });
  if (!refreshed) return first;
  first.body.resume();
  return send(deps, url, out, bearer(refreshed));
}

const challengeOf = (h: IncomingHttpHeaders): string | undefined => (Array.isArray(h['www-authenticate']) ? h['www-authenticate'][0] : h['www-authenticate']);
