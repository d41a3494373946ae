/**
 * The refresh of a user's upstream OAuth connection, after the MCP server answered 401: the token
 * endpoint is the integration's `configurations.token_url`, or found the way MCP clients find it
 * (RFC 9728 protected-resource metadata named by the challenge or at its well-known place, then
 * RFC 8414 authorization-server metadata). Every fetch goes through the SSRF-guarded client. The
 * new tokens are stored encrypted before they are used.
 */
import type { CoreDeps } from '../../deps.ts';
import { readCapped } from '../../http/node-streams.ts';
import { parseOutboundUrl } from '../../security/ssrf.ts';
import { McpRepository, openMcpSecrets, putUserConnection, type McpConnection, type McpRoute } from '../../store/mcp.ts';

const TIMEOUT_MS = 10_000;
const MAX_DOCUMENT_BYTES = 64 * 1024;

type Json = Record<string, unknown>;

async function fetchJson(deps: CoreDeps, raw: string, init: { method: 'GET' | 'POST'; body?: string } = { method: 'GET' }): Promise<Json | undefined> {
  const url = parseOutboundUrl(raw, 'url', deps.trustedHosts);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
  const res = await deps.upstream.send({ url, method: init.method, headers, body: init.body, timeoutMs: TIMEOUT_MS });
  const { bytes } = await readCapped(res.body, MAX_DOCUMENT_BYTES);
  if (res.status !== 200) return undefined;
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return typeof value === 'object' && value !== null ? (value as Json) : undefined;
  } catch {
    return undefined;
  }
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** `https://as.example/tenant` -> its RFC 8414 and OpenID metadata locations. */
function metadataUrls(issuer: URL, kind: 'oauth-authorization-server' | 'openid-configuration' | 'oauth-protected-resource'): string[] {
  const path = issuer.pathname === '/' ? '' : issuer.pathname.replace(/\/+$/, '');
  return path ? [`${issuer.origin}/.well-known/${kind}${path}`, `${issuer.origin}/.well-known/${kind}`] : [`${issuer.origin}/.well-known/${kind}`];
}

async function firstJson(deps: CoreDeps, urls: readonly string[]): Promise<Json | undefined> {
  for (const u of urls) {
    const doc = await fetchJson(deps, u).catch(() => undefined);
    if (doc) return doc;
  }
  return undefined;
}

/** The token endpoint, discovered from the server's URL and its 401 challenge. */
async function discoverTokenEndpoint(deps: CoreDeps, serverUrl: string, challenge: string | undefined): Promise<string | undefined> {
  const named = /resource_metadata="([^"]+)"/.exec(challenge ?? '')?.[1];
  const resource = await firstJson(deps, named ? [named] : metadataUrls(new URL(serverUrl), 'oauth-protected-resource'));
  const issuer = new URL(str((resource?.authorization_servers as unknown[] | undefined)?.[0]) ?? new URL(serverUrl).origin);
  const as = await firstJson(deps, [...metadataUrls(issuer, 'oauth-authorization-server'), ...metadataUrls(issuer, 'openid-configuration')]);
  return str(as?.token_endpoint);
}

/** New tokens for the connection, stored; undefined when the server refused the refresh. */
export async function refreshConnection(
  deps: CoreDeps,
  route: McpRoute,
  conn: McpConnection,
  challenge: string | undefined,
): Promise<McpConnection | undefined> {
  const org = route.server.organisationId;
  const repo = new McpRepository(deps.repos.table);
  const server = await repo.resolveServer(org, route.server.id);
  const integration = server ? await repo.getIntegration(org, server.mcp_integration_id) : undefined;
  if (!integration || !conn.tokens.refresh_token) return undefined;
  const config = integration.configurations;
  const tokenUrl = str(config.token_url) ?? (await discoverTokenEndpoint(deps, route.upstream.url, challenge));
  if (!tokenUrl) return undefined;
  const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: conn.tokens.refresh_token, resource: route.upstream.url });
  const clientId = str(config.client_id);
  if (clientId) form.set('client_id', clientId);
  const secret = (await openMcpSecrets(deps.cipher, integration)).client_secret;
  if (secret) form.set('client_secret', secret);
  const answer = await fetchJson(deps, tokenUrl, { method: 'POST', body: form.toString() });
  const access = str(answer?.access_token);
  if (!answer || !access) return undefined;
  const expiresIn = typeof answer.expires_in === 'number' ? answer.expires_in : undefined;
  const tokens = { ...conn.tokens, access_token: access, refresh_token: str(answer.refresh_token) ?? conn.tokens.refresh_token };
  const now = deps.clock.now();
  const refreshed = { ...conn, tokens, expiresAt: expiresIn === undefined ? null : new Date(now + expiresIn * 1000).toISOString() };
  await putUserConnection({ table: deps.repos.table, cipher: deps.cipher }, org, { ...refreshed, now: new Date(now).toISOString() });
  return refreshed;
}
