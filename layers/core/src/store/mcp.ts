/**
 * MCP integrations (an upstream MCP server's address and credentials), their discovered
 * capabilities and metadata, the MCP servers (a workspace's instance of an integration, reached by
 * the gateway as `/mcp/{slug}`) and the users' OAuth connections. Layout, all under `ORG#<org>`:
 * - `MCPINT#<id>`: the integration; static headers and OAuth client secrets only as ciphertext;
 * - `MCPINTSLUG#<slug>`: the integration's slug claim (unique per organisation);
 * - `MCPCAPS#<integration>`: every capability of the integration in one item (one read on the hot path);
 * - `MCPMETA#<integration>`: what the last `initialize` said, and how the last sync went;
 * - `MCPSRV#<id>`: the server, with its capability overrides and user access;
 * - `MCPSRVSLUG#<slug>`: the slug claim (unique per organisation), naming server and integration
 *   so the gateway reads everything else in one batch;
 * - `MCPCONN#<server>#<user>`: a user's OAuth connection, tokens only as ciphertext.
 */
import { BatchGetCommand, GetCommand, PutCommand, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { ConflictError, NotFoundError } from '../http/errors.ts';
import type { Cipher, CipherContext } from '../ports/cipher.ts';
import type { SecretMapping } from '../ports/secret-managers.ts';
import { Entity, type Item, type ItemKey } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { prefixRange } from './prefix-range.ts';

export type McpAuthType = 'none' | 'headers' | 'oauth';
export type McpTransport = 'http' | 'sse';
export type McpCapabilityType = 'tool' | 'prompt' | 'resource';
export type McpAccess = 'allow' | 'deny';
export type McpSyncStatus = 'pending' | 'syncing' | 'synced' | 'failed';

export interface McpIntegrationRecord {
  id: string;
  organisation_id: string;
  /** Null for an organisation integration; else the one workspace that owns (and alone uses) it. */
  workspace_id: string | null;
  slug: string;
  name: string;
  description: string | null;
  url: string;
  auth_type: McpAuthType;
  transport: McpTransport;
  /** The configuration without its secret fields (OAuth client id, scopes, ...). */
  configurations: Record<string, unknown>;
  /** What is shown of the secret fields: `masked_custom_headers` (names, values masked), `masked_client_secret`. */
  masked_configurations: Record<string, unknown>;
  /** `McpSecrets` as one ciphertext bound to `{organisation_id, mcp_integration_id}`; null when none. */
  secret: string | null;
  secret_mappings?: SecretMapping[];
  /** Organisation integrations: every workspace may use it when true, else only `workspace_ids`. */
  global_workspace_access: boolean;
  workspace_ids: string[];
  /** Whether capabilities found by a later sync start enabled (default true). */
  new_capabilities_enabled: boolean;
  status: 'active';
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

/** What the integration's ciphertext holds. */
export interface McpSecrets {
  headers: Record<string, string>;
  client_secret?: string;
}

export interface McpCapability {
  name: string;
  type: McpCapabilityType;
  enabled: boolean;
  title?: string | null;
  description?: string | null;
  /** SHA-256 of the definition (description, schema) as last discovered: a changed tool shows. */
  schema_hash?: string | null;
  input_schema?: Record<string, unknown> | null;
  /** False once a sync no longer finds it on the server: kept (with its choice) but never allowed. */
  available?: boolean;
  created_at: string;
  last_updated_at: string;
}

export interface McpCapabilitiesRecord {
  organisation_id: string;
  mcp_integration_id: string;
  capabilities: McpCapability[];
  last_updated_at: string;
}

export interface McpMetadataRecord {
  organisation_id: string;
  mcp_integration_id: string;
  server_name: string | null;
  server_version: string | null;
  protocol_version: string | null;
  capability_flags: Record<string, unknown>;
  sync_status: McpSyncStatus;
  last_synced_at: string | null;
  sync_error: string | null;
}

export interface McpServerRecord {
  id: string;
  organisation_id: string;
  workspace_id: string;
  slug: string;
  name: string;
  description: string | null;
  mcp_integration_id: string;
  /** `type:name` -> enabled; a server may only narrow what its integration enables. */
  capability_overrides: Record<string, boolean>;
  default_user_access: McpAccess;
  /** user id -> access, overriding the default. */
  user_access: Record<string, McpAccess>;
  status: 'active';
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

interface McpSlugClaim {
  organisation_id: string;
  slug: string;
  mcp_server_id: string;
  mcp_integration_id: string;
}

export interface McpConnectionRecord {
  organisation_id: string;
  mcp_server_id: string;
  workspace_id: string;
  user_id: string;
  /** `McpTokens` as one ciphertext bound to `{organisation_id, mcp_server_id, user_id}`. */
  secret: string;
  /** ISO 8601; when the access token expires, null when unknown. */
  expires_at: string | null;
  created_at: string;
  last_updated_at: string;
}

/** A user's upstream OAuth tokens, decrypted. */
export interface McpTokens {
  access_token: string;
  refresh_token?: string;
  token_type?: string;
  scope?: string;
}

export interface McpConnection {
  serverId: string;
  userId: string;
  workspaceId: string;
  tokens: McpTokens;
  expiresAt: string | null;
  createdAt: string;
}

const orgPk = (org: string) => `ORG#${org}`;

export const McpIntegration = new Entity<McpIntegrationRecord>({
  name: 'McpIntegration',
  key: (r) => ({ pk: orgPk(r.organisation_id), sk: `MCPINT#${r.id}` }),
});

export const McpIntegrationSlug = new Entity<{ organisation_id: string; slug: string; mcp_integration_id: string }>({
  name: 'McpIntegrationSlug',
  key: (r) => ({ pk: orgPk(r.organisation_id), sk: `MCPINTSLUG#${r.slug}` }),
});

export const McpCapabilities = new Entity<McpCapabilitiesRecord>({
  name: 'McpCapabilities',
  key: (r) => ({ pk: orgPk(r.organisation_id), sk: `MCPCAPS#${r.mcp_integration_id}` }),
});

export const McpMetadata = new Entity<McpMetadataRecord>({
  name: 'McpMetadata',
  key: (r) => ({ pk: orgPk(r.organisation_id), sk: `MCPMETA#${r.mcp_integration_id}` }),
});

export const McpServer = new Entity<McpServerRecord>({
  name: 'McpServer',
  key: (r) => ({ pk: orgPk(r.organisation_id), sk: `MCPSRV#${r.id}` }),
  gsi1: (r) => ({ pk: `MCPINT#${r.mcp_integration_id}#SERVERS`, sk: `${r.created_at}#${r.id}` }),
});

export const McpServerSlug = new Entity<McpSlugClaim>({
  name: 'McpServerSlug',
  key: (r) => ({ pk: orgPk(r.organisation_id), sk: `MCPSRVSLUG#${r.slug}` }),
});

export const McpConnectionEntity = new Entity<McpConnectionRecord>({
  name: 'McpConnection',
  key: (r) => connectionKey(r.organisation_id, r.mcp_server_id, r.user_id),
});

const integrationKey = (org: string, id: string): ItemKey => ({ pk: orgPk(org), sk: `MCPINT#${id}` });
const capabilitiesKey = (org: string, id: string): ItemKey => ({ pk: orgPk(org), sk: `MCPCAPS#${id}` });
const metadataKey = (org: string, id: string): ItemKey => ({ pk: orgPk(org), sk: `MCPMETA#${id}` });
const serverKey = (org: string, id: string): ItemKey => ({ pk: orgPk(org), sk: `MCPSRV#${id}` });
const slugKey = (org: string, slug: string): ItemKey => ({ pk: orgPk(org), sk: `MCPSRVSLUG#${slug}` });
function connectionKey(org: string, serverId: string, userId: string): ItemKey {
  return { pk: orgPk(org), sk: `MCPCONN#${serverId}#${userId}` };
}

export const capabilityKey = (c: { type: McpCapabilityType; name: string }): string => `${c.type}:${c.name}`;

export const mcpIntegrationContext = (org: string, integrationId: string): CipherContext => ({
  organisation_id: org,
  mcp_integration_id: integrationId,
});

const connectionContext = (org: string, serverId: string, userId: string): CipherContext => ({
  organisation_id: org,
  mcp_server_id: serverId,
  user_id: userId,
});

/** One ciphertext for the static headers and the OAuth client secret; null when there is nothing secret. */
export async function sealMcpSecrets(cipher: Cipher, org: string, integrationId: string, secrets: McpSecrets): Promise<string | null> {
  if (Object.keys(secrets.headers).length === 0 && secrets.client_secret === undefined) return null;
  return cipher.encrypt(JSON.stringify(secrets), mcpIntegrationContext(org, integrationId));
}

export async function openMcpSecrets(cipher: Cipher, rec: Pick<McpIntegrationRecord, 'organisation_id' | 'id' | 'secret'>): Promise<McpSecrets> {
  if (rec.secret === null) return { headers: {} };
  const parsed = JSON.parse(await cipher.decrypt(rec.secret, mcpIntegrationContext(rec.organisation_id, rec.id))) as Partial<McpSecrets>;
  return { headers: parsed.headers ?? {}, ...(typeof parsed.client_secret === 'string' ? { client_secret: parsed.client_secret } : {}) };
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

const cancelled = (err: unknown): err is Error & { CancellationReasons?: Array<{ Code?: string }> } =>
  err instanceof Error && err.name === 'TransactionCanceledException';
const failedAt = (err: unknown, i: number): boolean => cancelled(err) && err.CancellationReasons?.[i]?.Code === 'ConditionalCheckFailed';

const byCreation = <R extends { created_at: string; id: string }>(a: R, b: R) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id);

/** Whether a workspace may use the integration (its owner, or granted by an organisation integration). */
export function integrationAllows(rec: McpIntegrationRecord, workspaceId: string): boolean {
  if (rec.workspace_id !== null) return rec.workspace_id === workspaceId;
  return rec.global_workspace_access || rec.workspace_ids.includes(workspaceId);
}

export function emptyMetadata(org: string, integrationId: string): McpMetadataRecord {
  return {
    organisation_id: org,
    mcp_integration_id: integrationId,
    server_name: null,
    server_version: null,
    protocol_version: null,
    capability_flags: {},
    sync_status: 'pending',
    last_synced_at: null,
    sync_error: null,
  };
}

export class McpRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  // --- integrations --------------------------------------------------------------------------

  /** The integration, its slug claim, empty capabilities and pending metadata, together. A taken slug is a conflict. */
  async createIntegration(rec: McpIntegrationRecord): Promise<void> {
    const org = rec.organisation_id;
    try {
      await this.#t.transact([
        this.#t.putIfAbsent(McpIntegrationSlug.toItem({ organisation_id: org, slug: rec.slug, mcp_integration_id: rec.id })),
        this.#t.putIfAbsent(McpIntegration.toItem(rec)),
        this.#t.putIfAbsent(McpCapabilities.toItem({ organisation_id: org, mcp_integration_id: rec.id, capabilities: [], last_updated_at: rec.created_at })),
        this.#t.putIfAbsent(McpMetadata.toItem(emptyMetadata(org, rec.id))),
      ]);
    } catch (err) {
      if (failedAt(err, 0)) throw new ConflictError(`An MCP integration with slug "${rec.slug}" already exists`, { param: 'slug' });
      if (cancelled(err)) throw new ConflictError(`An MCP integration with id ${rec.id} already exists`);
      throw err;
    }
  }

  /** Saves an item only if it still exists (404 naming `what` otherwise). */
  async #replace(item: Item, what: string): Promise<void> {
    try {
      await this.#t.transact([{ Put: { TableName: this.#t.tableName, Item: item, ConditionExpression: 'attribute_exists(pk)' } }]);
    } catch (err) {
      if (cancelled(err)) throw new NotFoundError(`${what} not found`);
      throw err;
    }
  }

  updateIntegration(rec: McpIntegrationRecord): Promise<void> {
    return this.#replace(McpIntegration.toItem(rec), `MCP integration ${rec.id}`);
  }

  /** Deletes the integration and its discovery items; refused while a server uses it. */
  async deleteIntegration(rec: McpIntegrationRecord): Promise<void> {
    const servers = await this.serversOfIntegration(rec.organisation_id, rec.id);
    if (servers.length > 0) {
      throw new ConflictError(`MCP integration ${rec.id} is used by ${servers.length} MCP server(s); delete them first`);
    }
    const del = (key: ItemKey): TransactItem => ({ Delete: { TableName: this.#t.tableName, Key: key } });
    await this.#t.transact([
      { Delete: { TableName: this.#t.tableName, Key: McpIntegration.key(rec), ConditionExpression: 'attribute_exists(pk)' } },
      del({ pk: orgPk(rec.organisation_id), sk: `MCPINTSLUG#${rec.slug}` }),
      del(capabilitiesKey(rec.organisation_id, rec.id)),
      del(metadataKey(rec.organisation_id, rec.id)),
    ]);
  }

  getIntegration(org: string, id: string): Promise<McpIntegrationRecord | undefined> {
    return this.#t.get(McpIntegration, integrationKey(org, id), true);
  }

  /** By id or slug. */
  async resolveIntegration(org: string, idOrSlug: string): Promise<McpIntegrationRecord | undefined> {
    const byId = await this.getIntegration(org, idOrSlug);
    if (byId) return byId;
    const claim = await this.#t.get(McpIntegrationSlug, { pk: orgPk(org), sk: `MCPINTSLUG#${idOrSlug}` }, true);
    return claim ? this.getIntegration(org, claim.mcp_integration_id) : undefined;
  }

  async listIntegrations(org: string): Promise<McpIntegrationRecord[]> {
    const all = await this.#t.queryAll(McpIntegration, {
      ...prefixRange(orgPk(org), 'MCPINT#'),
      ConsistentRead: true,
    });
    return all.sort(byCreation);
  }

  // --- capabilities and metadata ---------------------------------------------------------------

  async getCapabilities(org: string, integrationId: string): Promise<McpCapability[]> {
    const rec = await this.#t.get(McpCapabilities, capabilitiesKey(org, integrationId), true);
    return rec?.capabilities ?? [];
  }

  /** Replaces the capability list, only if the integration still exists. */
  async putCapabilities(org: string, integrationId: string, capabilities: McpCapability[], at: string): Promise<void> {
    try {
      await this.#t.transact([
        { ConditionCheck: { TableName: this.#t.tableName, Key: integrationKey(org, integrationId), ConditionExpression: 'attribute_exists(pk)' } },
        {
          Put: {
            TableName: this.#t.tableName,
            Item: McpCapabilities.toItem({ organisation_id: org, mcp_integration_id: integrationId, capabilities, last_updated_at: at }),
          },
        },
      ]);
    } catch (err) {
      if (failedAt(err, 0)) throw new NotFoundError(`MCP integration ${integrationId} not found`);
      throw err;
    }
  }

  async getMetadata(org: string, integrationId: string): Promise<McpMetadataRecord> {
    return (await this.#t.get(McpMetadata, metadataKey(org, integrationId), true)) ?? emptyMetadata(org, integrationId);
  }

  /** Saves the metadata; a sync result for a deleted integration is dropped (returns false). */
  async putMetadata(rec: McpMetadataRecord): Promise<boolean> {
    try {
      await this.#t.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              ConditionCheck: {
                TableName: this.#t.tableName,
                Key: integrationKey(rec.organisation_id, rec.mcp_integration_id),
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
            { Put: { TableName: this.#t.tableName, Item: McpMetadata.toItem(rec) } },
          ],
        }),
      );
      return true;
    } catch (err) {
      if (failedAt(err, 0)) return false;
      throw err;
    }
  }

  // --- servers ---------------------------------------------------------------------------------

  /** The server and its slug claim; the integration must still exist. A taken slug is a conflict. */
  async createServer(rec: McpServerRecord): Promise<void> {
    const org = rec.organisation_id;
    const claim: McpSlugClaim = { organisation_id: org, slug: rec.slug, mcp_server_id: rec.id, mcp_integration_id: rec.mcp_integration_id };
    try {
      await this.#t.transact([
        this.#t.putIfAbsent(McpServerSlug.toItem(claim)),
        this.#t.putIfAbsent(McpServer.toItem(rec)),
        { ConditionCheck: { TableName: this.#t.tableName, Key: integrationKey(org, rec.mcp_integration_id), ConditionExpression: 'attribute_exists(pk)' } },
      ]);
    } catch (err) {
      if (failedAt(err, 0)) throw new ConflictError(`An MCP server with slug "${rec.slug}" already exists`, { param: 'slug' });
      if (failedAt(err, 2)) throw new NotFoundError(`MCP integration ${rec.mcp_integration_id} not found`, { param: 'mcp_integration_id' });
      if (cancelled(err)) throw new ConflictError('Another request changed the same items at the same time; retry');
      throw err;
    }
  }

  /** Saves a changed server (its slug and integration never change). */
  updateServer(rec: McpServerRecord): Promise<void> {
    return this.#replace(McpServer.toItem(rec), `MCP server ${rec.id}`);
  }

  /** Deletes the server, its slug claim and its users' connections. */
  async deleteServer(rec: McpServerRecord): Promise<void> {
    const org = rec.organisation_id;
    const connections = await this.listConnections(org, rec.id);
    const del = (key: ItemKey): TransactItem => ({ Delete: { TableName: this.#t.tableName, Key: key } });
    const head: TransactItem[] = [
      { Delete: { TableName: this.#t.tableName, Key: McpServer.key(rec), ConditionExpression: 'attribute_exists(pk)' } },
      del(slugKey(org, rec.slug)),
    ];
    const rest = connections.map((c) => del(McpConnectionEntity.key(c)));
    try {
      // The server goes first with the audit entry; leftover connections are unreachable without it.
      await this.#t.transact([...head, ...rest.slice(0, 90)]);
    } catch (err) {
      if (failedAt(err, 0)) throw new NotFoundError(`MCP server ${rec.id} not found`);
      throw err;
    }
    for (let i = 90; i < rest.length; i += 100) {
      await this.#t.doc.send(new TransactWriteCommand({ TransactItems: rest.slice(i, i + 100) }));
    }
  }

  getServer(org: string, id: string): Promise<McpServerRecord | undefined> {
    return this.#t.get(McpServer, serverKey(org, id), true);
  }

  /** By id or slug. */
  async resolveServer(org: string, idOrSlug: string): Promise<McpServerRecord | undefined> {
    const byId = await this.getServer(org, idOrSlug);
    if (byId) return byId;
    const claim = await this.#t.get(McpServerSlug, slugKey(org, idOrSlug), true);
    return claim ? this.getServer(org, claim.mcp_server_id) : undefined;
  }

  /** The organisation's servers, or one workspace's; oldest first. */
  async listServers(org: string, workspaceId?: string): Promise<McpServerRecord[]> {
    const all = await this.#t.queryAll(McpServer, {
      ...prefixRange(orgPk(org), 'MCPSRV#'),
      ConsistentRead: true,
    });
    return all.filter((s) => workspaceId === undefined || s.workspace_id === workspaceId).sort(byCreation);
  }

  /** Exact (a consistent read of the organisation's servers), because deleting an integration depends on it. */
  async serversOfIntegration(org: string, integrationId: string): Promise<McpServerRecord[]> {
    return (await this.listServers(org)).filter((s) => s.mcp_integration_id === integrationId);
  }

  // --- connections -----------------------------------------------------------------------------

  /** A server's connections, oldest first. */
  async listConnections(org: string, serverId: string): Promise<McpConnectionRecord[]> {
    const all = await this.#t.queryAll(McpConnectionEntity, {
      ...prefixRange(orgPk(org), `MCPCONN#${serverId}#`),
      ConsistentRead: true,
    });
    return all.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.user_id.localeCompare(b.user_id));
  }

  /** Removes one connection; false when there was none. */
  async deleteConnection(org: string, serverId: string, userId: string): Promise<boolean> {
    try {
      await this.#t.transact([
        { Delete: { TableName: this.#t.tableName, Key: connectionKey(org, serverId, userId), ConditionExpression: 'attribute_exists(pk)' } },
      ]);
      return true;
    } catch (err) {
      if (cancelled(err)) return false;
      throw err;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The gateway's reads
// ---------------------------------------------------------------------------------------------

export interface McpStoreDeps {
  table: TableClient;
  cipher: Cipher;
}

export interface McpRoute {
  server: { id: string; slug: string; name: string; workspaceId: string; organisationId: string };
  upstream: { url: string; transport: McpTransport; authType: McpAuthType; headers: Record<string, string> };
  /** Enabled capabilities after the server's overrides. */
  allowed: { tools: ReadonlySet<string>; prompts: ReadonlySet<string>; resources: ReadonlySet<string> };
  userAccess: { default: McpAccess; users: ReadonlyMap<string, McpAccess> };
}

/** Reads items of one partition by key in one BatchGetItem (a key DynamoDB leaves unprocessed is read alone). */
async function batchGetBySk(t: TableClient, keys: readonly ItemKey[]): Promise<Map<string, Item>> {
  const out = await t.doc.send(new BatchGetCommand({ RequestItems: { [t.tableName]: { Keys: [...keys] } } }));
  const found = new Map<string, Item>();
  for (const item of out.Responses?.[t.tableName] ?? []) found.set(String(item.sk), item);
  for (const key of (out.UnprocessedKeys?.[t.tableName]?.Keys ?? []) as ItemKey[]) {
    const one = await t.doc.send(new GetCommand({ TableName: t.tableName, Key: key }));
    if (one.Item) found.set(key.sk, one.Item);
  }
  return found;
}

/** The effective allow-list: enabled on the integration and not disabled by the server. */
export function effectiveCapabilities(capabilities: readonly McpCapability[], overrides: Readonly<Record<string, boolean>>): McpCapability[] {
  return capabilities.map((c) => ({ ...c, enabled: c.enabled && c.available !== false && overrides[capabilityKey(c)] !== false }));
}

/**
 * What the gateway needs to serve `/mcp/{slug}`: two reads (the slug claim, then one batch of
 * server, integration and capabilities). Undefined when the slug is unknown, or the server's
 * workspace lost its grant on the integration.
 */
export async function loadMcpRoute(deps: McpStoreDeps, organisationId: string, slug: string): Promise<McpRoute | undefined> {
  const claim = await deps.table.get(McpServerSlug, slugKey(organisationId, slug));
  if (!claim) return undefined;
  const keys = [
    serverKey(organisationId, claim.mcp_server_id),
    integrationKey(organisationId, claim.mcp_integration_id),
    capabilitiesKey(organisationId, claim.mcp_integration_id),
  ];
  const items = await batchGetBySk(deps.table, keys);
  const srvItem = items.get(keys[0]!.sk);
  const intItem = items.get(keys[1]!.sk);
  if (!srvItem || !intItem) return undefined;
  const server = McpServer.fromItem(srvItem);
  const integration = McpIntegration.fromItem(intItem);
  if (!integrationAllows(integration, server.workspace_id)) return undefined;
  const caps = items.get(keys[2]!.sk);
  const capabilities = caps ? McpCapabilities.fromItem(caps).capabilities : [];
  const enabled = effectiveCapabilities(capabilities, server.capability_overrides).filter((c) => c.enabled);
  const names = (type: McpCapabilityType) => new Set(enabled.filter((c) => c.type === type).map((c) => c.name));
  const secrets = await openMcpSecrets(deps.cipher, integration);
  return {
    server: { id: server.id, slug: server.slug, name: server.name, workspaceId: server.workspace_id, organisationId },
    upstream: { url: integration.url, transport: integration.transport, authType: integration.auth_type, headers: secrets.headers },
    allowed: { tools: names('tool'), prompts: names('prompt'), resources: names('resource') },
    userAccess: { default: server.default_user_access, users: new Map(Object.entries(server.user_access)) },
  };
}

/** A user's decrypted OAuth connection to a server, if any. */
export async function getUserConnection(deps: McpStoreDeps, organisationId: string, serverId: string, userId: string): Promise<McpConnection | undefined> {
  const rec = await deps.table.get(McpConnectionEntity, connectionKey(organisationId, serverId, userId), true);
  if (!rec) return undefined;
  const tokens = JSON.parse(await deps.cipher.decrypt(rec.secret, connectionContext(organisationId, serverId, userId))) as McpTokens;
  return { serverId, userId, workspaceId: rec.workspace_id, tokens, expiresAt: rec.expires_at, createdAt: rec.created_at };
}

/** Stores (or replaces, after a refresh) a user's connection with its tokens encrypted; keeps `created_at`. */
export async function putUserConnection(deps: McpStoreDeps, organisationId: string, conn: Omit<McpConnection, 'createdAt'> & { now: string }): Promise<void> {
  const secret = await deps.cipher.encrypt(JSON.stringify(conn.tokens), connectionContext(organisationId, conn.serverId, conn.userId));
  const existing = await deps.table.get(McpConnectionEntity, connectionKey(organisationId, conn.serverId, conn.userId), true);
  const rec: McpConnectionRecord = {
    organisation_id: organisationId,
    mcp_server_id: conn.serverId,
    workspace_id: conn.workspaceId,
    user_id: conn.userId,
    secret,
    expires_at: conn.expiresAt,
    created_at: existing?.created_at ?? conn.now,
    last_updated_at: conn.now,
  };
  await deps.table.doc.send(new PutCommand({ TableName: deps.table.tableName, Item: McpConnectionEntity.toItem(rec) }));
}
