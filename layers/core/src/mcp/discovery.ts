/**
 * Discovery: connects to an MCP integration's server with the official SDK client (Streamable HTTP,
 * or the legacy HTTP+SSE transport), runs the `initialize` handshake and lists the tools, prompts,
 * resources and resource templates (a template is a resource named by its URI template, which is
 * what the gateway's allow-list matches `resources/read` URIs against). A sync stores what it
 * found: the metadata, and the capabilities merged into the stored ones, where an admin's
 * enabled/disabled choice always survives. Capabilities seen for the
 * first time start enabled unless the integration sets `new_capabilities_enabled: false`; one the
 * server no longer offers is kept (`available: false`, never allowed) so that a disabled tool that
 * disappears and comes back stays disabled.
 */
import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Clock } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import type { Cipher } from '../ports/cipher.ts';
import {
  capabilityKey,
  openMcpSecrets,
  type McpCapability,
  type McpCapabilityType,
  type McpIntegrationRecord,
  type McpRepository,
  type McpTransport,
} from '../store/mcp.ts';
import type { McpFetch } from './fetch.ts';

export const DISCOVERY_TIMEOUT_MS = 15_000;
const MAX_PAGES = 50;

export interface DiscoveryTarget {
  url: string;
  transport: McpTransport;
  headers: Record<string, string>;
}

export interface DiscoveredCapability {
  type: McpCapabilityType;
  name: string;
  title: string | null;
  description: string | null;
  input_schema: Record<string, unknown> | null;
  schema_hash: string;
}

export interface Discovered {
  serverName: string | null;
  serverVersion: string | null;
  protocolVersion: string | null;
  capabilityFlags: Record<string, unknown>;
  capabilities: DiscoveredCapability[];
}

interface Listed {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  inputSchema?: Record<string, unknown>;
  uri?: string;
  uriTemplate?: string;
}

function describe(type: McpCapabilityType, item: Listed): DiscoveredCapability {
  // Resources are allowed by URI (or URI template): that is what `resources/read` names.
  const name = type === 'resource' ? (item.uri ?? item.uriTemplate ?? item.name) : item.name;
  const input = item.inputSchema ?? null;
  const hash = createHash('sha256')
    .update(JSON.stringify({ description: item.description ?? null, input }))
    .digest('hex');
  return { type, name, title: item.title ?? null, description: item.description ?? null, input_schema: input, schema_hash: hash };
}

/** Every page of a list (bounded, so a server that loops its cursors cannot hold a sync forever). */
async function allPages<T>(list: (cursor?: string) => Promise<{ items: T[]; nextCursor?: string | undefined }>): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await list(cursor);
    out.push(...res.items);
    if (!res.nextCursor) break;
    cursor = res.nextCursor;
  }
  return out;
}

/** A server with resources but no `resources/templates/list` (method not found) has no templates; any other error fails the sync. */
function noTemplates(err: unknown): { resourceTemplates: []; nextCursor: undefined } {
  if (err instanceof McpError && err.code === ErrorCode.MethodNotFound) return { resourceTemplates: [], nextCursor: undefined };
  throw err;
}

async function listAll(client: Client, timeout: number): Promise<DiscoveredCapability[]> {
  const caps = client.getServerCapabilities() ?? {};
  const opts = { timeout };
  const tools = caps.tools
    ? await allPages(async (cursor) => {
        const r = await client.listTools(cursor ? { cursor } : {}, opts);
        return { items: r.tools as Listed[], nextCursor: r.nextCursor };
      })
    : [];
  const prompts = caps.prompts
    ? await allPages(async (cursor) => {
        const r = await client.listPrompts(cursor ? { cursor } : {}, opts);
        return { items: r.prompts as Listed[], nextCursor: r.nextCursor };
      })
    : [];
  const resources = caps.resources
    ? await allPages(async (cursor) => {
        const r = await client.listResources(cursor ? { cursor } : {}, opts);
        return { items: r.resources as Listed[], nextCursor: r.nextCursor };
      })
    : [];
  const templates = caps.resources
    ? await allPages(async (cursor) => {
        const r = await client.listResourceTemplates(cursor ? { cursor } : {}, opts).catch(noTemplates);
        return { items: r.resourceTemplates as Listed[], nextCursor: r.nextCursor };
      })
    : [];
  return [
    ...tools.map((t) => describe('tool', t)),
    ...prompts.map((p) => describe('prompt', p)),
    ...[...resources, ...templates].map((r) => describe('resource', r)),
  ];
}

/** Connects, runs `initialize`, lists everything, disconnects; rejects after `timeoutMs`. */
export async function discover(target: DiscoveryTarget, fetch: McpFetch, timeoutMs = DISCOVERY_TIMEOUT_MS): Promise<Discovered> {
  const url = new URL(target.url);
  const requestInit = { headers: target.headers };
  const transport =
    target.transport === 'sse' ? new SSEClientTransport(url, { requestInit, fetch }) : new StreamableHTTPClientTransport(url, { requestInit, fetch });
  // The client tells the transport the version `initialize` settled on; neither SDK class exposes it on both.
  let negotiated: string | null = null;
  const setVersion = transport.setProtocolVersion.bind(transport);
  transport.setProtocolVersion = (v: string) => {
    negotiated = v;
    setVersion(v);
  };
  const client = new Client({ name: 'gantry-discovery', version: '1.0.0' });
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`No complete answer from the MCP server within ${timeoutMs} ms`)), timeoutMs);
  });
  const run = async (): Promise<Discovered> => {
    await client.connect(transport, { timeout: timeoutMs });
    const version = client.getServerVersion();
    const capabilities = await listAll(client, timeoutMs);
    return {
      serverName: version?.name ?? null,
      serverVersion: version?.version ?? null,
      protocolVersion: negotiated,
      capabilityFlags: { ...(client.getServerCapabilities() ?? {}) },
      capabilities,
    };
  };
  try {
    return await Promise.race([run(), expired]);
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => undefined);
  }
}

/** The stored list with what a sync found merged in (see the module comment for the rules). */
export function mergeCapabilities(stored: readonly McpCapability[], found: readonly DiscoveredCapability[], newEnabled: boolean, now: string): McpCapability[] {
  const byKey = new Map(stored.map((c) => [capabilityKey(c), c]));
  const seen = new Set<string>();
  const merged: McpCapability[] = found.map((f) => {
    const key = capabilityKey(f);
    seen.add(key);
    const old = byKey.get(key);
    const changed = !old || old.schema_hash !== f.schema_hash || old.available === false;
    return {
      ...f,
      enabled: old ? old.enabled : newEnabled,
      available: true,
      created_at: old?.created_at ?? now,
      last_updated_at: changed ? now : (old?.last_updated_at ?? now),
    };
  });
  const gone = stored.filter((c) => !seen.has(capabilityKey(c))).map((c) => (c.available === false ? c : { ...c, available: false, last_updated_at: now }));
  return [...merged, ...gone];
}

export interface SyncDeps {
  mcp: McpRepository;
  cipher: Cipher;
  fetch: McpFetch;
  clock: Clock;
  logger: Logger;
}

/** The upstream as the integration reaches it: its URL, transport and decrypted static headers. */
export async function discoveryTarget(cipher: Cipher, rec: McpIntegrationRecord): Promise<DiscoveryTarget> {
  const { headers } = await openMcpSecrets(cipher, rec);
  return { url: rec.url, transport: rec.transport, headers };
}

/** The error text stored in `sync_error`: what went wrong, without anything the request carried. */
export function syncErrorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  // The SDK's transport errors carry the HTTP status as `code`; the message alone may not say it.
  const code = (err as { code?: unknown } | null)?.code;
  const status = typeof code === 'number' && code >= 400 && code < 600 && !text.includes(String(code)) ? `HTTP ${code}: ` : '';
  return `${status}${text}`.slice(0, 500);
}

/**
 * Syncs one integration: metadata and capabilities on success, `sync_status: failed` and the error
 * on failure. Never throws for an unreachable server; a deleted integration is skipped.
 */
export async function syncIntegration(deps: SyncDeps, organisationId: string, integrationId: string, timeoutMs = DISCOVERY_TIMEOUT_MS): Promise<void> {
  const rec = await deps.mcp.getIntegration(organisationId, integrationId);
  if (!rec) return;
  const before = await deps.mcp.getMetadata(organisationId, integrationId);
  const at = () => new Date(deps.clock.now()).toISOString();
  try {
    const found = await discover(await discoveryTarget(deps.cipher, rec), deps.fetch, timeoutMs);
    const stored = await deps.mcp.getCapabilities(organisationId, integrationId);
    await deps.mcp.putCapabilities(organisationId, integrationId, mergeCapabilities(stored, found.capabilities, rec.new_capabilities_enabled, at()), at());
    await deps.mcp.putMetadata({
      ...before,
      server_name: found.serverName,
      server_version: found.serverVersion,
      protocol_version: found.protocolVersion,
      capability_flags: found.capabilityFlags,
      sync_status: 'synced',
      last_synced_at: at(),
      sync_error: null,
    });
  } catch (err) {
    deps.logger.warn('MCP integration sync failed', { organisationId, mcpIntegrationId: integrationId, error: syncErrorText(err) });
    await deps.mcp.putMetadata({ ...before, sync_status: 'failed', last_synced_at: at(), sync_error: syncErrorText(err) });
  }
}
