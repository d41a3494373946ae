/**
 * MCP integration rules. An integration belongs to the organisation (used by the workspaces it is
 * granted to) or to one workspace (created by that workspace's managers while the setting
 * `managersWriteWsMcpIntegrations` allows it; enforced by rbac.ts through the scopes). Static
 * headers and the OAuth client secret are encrypted before they reach the table and are shown only
 * as `****`. Creating one, or changing how it is reached, queues a sync (mcp/sync-queue.ts).
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ForbiddenError, NotFoundError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { parseOutboundUrl } from '../../security/ssrf.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { McpRepository, openMcpSecrets, sealMcpSecrets, type McpCapability, type McpIntegrationRecord, type McpSecrets } from '../../store/mcp.ts';
import { createWithSlug, slugFrom } from '../integrations/common.ts';
import { requestSync } from '../../mcp/sync-queue.ts';
import type { CapabilitiesUpdateBody, CreateMcpIntegrationBody, McpConfigurationsBody, UpdateMcpIntegrationBody } from './schema.ts';

const MASK = '****';
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers the transport itself sets: a static value would break or spoof the protocol. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'connection',
  'transfer-encoding',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);

export interface McpIntegrationView {
  object: 'mcp-integration';
  id: string;
  slug: string;
  name: string;
  description: string | null;
  organisation_id: string;
  workspace_id: string | null;
  type: 'organisation' | 'workspace';
  owner_id: string | null;
  status: string;
  url: string;
  auth_type: string;
  transport: string;
  /** Plain fields; secret ones only as `masked_custom_headers` (names, values masked) and `masked_client_secret`. */
  configurations: Record<string, unknown>;
  global_workspace_access: { enabled: boolean } | null;
  created_at: string;
  last_updated_at: string;
}

export function toIntegrationView(r: McpIntegrationRecord): McpIntegrationView {
  return {
    object: 'mcp-integration',
    id: r.id,
    slug: r.slug,
    name: r.name,
    description: r.description,
    organisation_id: r.organisation_id,
    workspace_id: r.workspace_id,
    type: r.workspace_id === null ? 'organisation' : 'workspace',
    owner_id: r.created_by,
    status: r.status,
    url: r.url,
    auth_type: r.auth_type,
    transport: r.transport,
    configurations: { ...r.configurations, ...r.masked_configurations, new_capabilities_enabled: r.new_capabilities_enabled },
    global_workspace_access: r.workspace_id === null ? { enabled: r.global_workspace_access } : null,
    created_at: r.created_at,
    last_updated_at: r.last_updated_at,
  };
}

interface SplitConfigurations {
  plain: Record<string, unknown>;
  masked: Record<string, unknown>;
  secrets: McpSecrets;
}

/** Checks the header names and values, and splits what is secret from what may be shown. */
function splitConfigurations(c: McpConfigurationsBody, authType: string, problems: FieldProblem[]): SplitConfigurations {
  const headers = c.custom_headers ?? {};
  for (const [name, value] of Object.entries(headers)) {
    const path = `configurations.custom_headers.${name}`;
    if (!HEADER_NAME.test(name)) problems.push({ path, message: 'is not a valid HTTP header name' });
    else if (RESERVED_HEADERS.has(name.toLowerCase())) problems.push({ path, message: 'is set by the MCP transport and cannot be configured' });
    if (/[\r\n\0]/.test(value)) problems.push({ path, message: 'must not contain line breaks or NUL' });
  }
  if (authType === 'headers' && Object.keys(headers).length === 0) {
    problems.push({ path: 'configurations.custom_headers', message: 'must name at least one header when auth_type is headers' });
  }
  const { custom_headers: _h, client_secret, new_capabilities_enabled: _n, ...plain } = c;
  const masked: Record<string, unknown> = {};
  if (Object.keys(headers).length > 0) masked.masked_custom_headers = Object.fromEntries(Object.keys(headers).map((k) => [k, MASK]));
  if (client_secret !== undefined) masked.masked_client_secret = MASK;
  return { plain, masked, secrets: { headers, ...(client_secret !== undefined ? { client_secret } : {}) } };
}

const nowIso = (deps: CoreDeps) => new Date(deps.clock.now()).toISOString();

export class McpIntegrationService {
  readonly #deps: CoreDeps;
  readonly repo: McpRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.repo = new McpRepository(deps.repos.table);
  }

  /** The owning workspace of a new integration (null: the organisation). */
  async #ownerFor(caller: Principal, body: CreateMcpIntegrationBody): Promise<string | null> {
    if (body.organisation_id !== undefined && body.organisation_id !== caller.organisationId) {
      throw new NotFoundError(`Organisation ${body.organisation_id} not found`, { param: 'organisation_id' });
    }
    if (body.workspace_id === undefined) return isOrganisationPrincipal(caller) ? null : caller.workspaceId;
    const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, body.workspace_id);
    if (!ws || (!isOrganisationPrincipal(caller) && ws.id !== caller.workspaceId)) {
      throw new NotFoundError(`Workspace ${body.workspace_id} not found`, { param: 'workspace_id' });
    }
    return ws.id;
  }

  #checkUrl(url: string, problems: FieldProblem[]): void {
    try {
      parseOutboundUrl(url, 'url', this.#deps.trustedHosts);
    } catch (err) {
      if (err instanceof ValidationError) problems.push(...err.problems);
      else throw err;
    }
  }

  async create(caller: Principal, body: CreateMcpIntegrationBody): Promise<{ id: string; slug: string }> {
    const problems: FieldProblem[] = [];
    this.#checkUrl(body.url, problems);
    const split = splitConfigurations(body.configurations ?? {}, body.auth_type, problems);
    const workspaceId = await this.#ownerFor(caller, body);
    if (problems.length) throw new ValidationError(problems);
    const id = randomUUID();
    const now = nowIso(this.#deps);
    const base: Omit<McpIntegrationRecord, 'slug'> = {
      id,
      organisation_id: caller.organisationId,
      workspace_id: workspaceId,
      name: body.name,
      description: body.description ?? null,
      url: body.url,
      auth_type: body.auth_type,
      transport: body.transport,
      configurations: split.plain,
      masked_configurations: split.masked,
      secret: await sealMcpSecrets(this.#deps.cipher, caller.organisationId, id, split.secrets),
      global_workspace_access: false,
      workspace_ids: [],
      new_capabilities_enabled: body.configurations?.new_capabilities_enabled ?? true,
      status: 'active',
      created_at: now,
      last_updated_at: now,
      created_by: caller.userId ?? caller.keyId,
      last_updated_by: null,
    };
    auditTarget(id, workspaceId);
    const slug = await createWithSlug(body.slug ?? slugFrom(body.name, 'mcp'), body.slug === undefined, (s) =>
      this.repo.createIntegration({ ...base, slug: s }).then(() => s),
    );
    await requestSync(this.#deps, caller.organisationId, id);
    return { id, slug };
  }

  /** An integration the caller may see (by id or slug): its workspace's, or one granted to its workspace. */
  async get(caller: Principal, idOrSlug: string): Promise<McpIntegrationRecord> {
    const rec = await this.repo.resolveIntegration(caller.organisationId, idOrSlug);
    if (!rec || !this.#visible(caller, rec)) throw new NotFoundError(`MCP integration ${idOrSlug} not found`);
    return rec;
  }

  #visible(caller: Principal, rec: McpIntegrationRecord): boolean {
    if (isOrganisationPrincipal(caller)) return true;
    const ws = caller.workspaceId ?? '';
    return rec.workspace_id === null ? rec.global_workspace_access || rec.workspace_ids.includes(ws) : rec.workspace_id === ws;
  }

  /** Workspace principals change only their workspace's integrations. */
  async writable(caller: Principal, idOrSlug: string): Promise<McpIntegrationRecord> {
    const rec = await this.get(caller, idOrSlug);
    if (rec.workspace_id === null && !isOrganisationPrincipal(caller)) {
      throw new ForbiddenError('Organisation MCP integrations are changed by organisation owners and admins only');
    }
    return rec;
  }

  async list(
    caller: Principal,
    filter: { workspace_id?: string | undefined; type?: 'organisation' | 'workspace' | undefined; search?: string | undefined },
  ): Promise<McpIntegrationRecord[]> {
    let all = (await this.repo.listIntegrations(caller.organisationId)).filter((r) => this.#visible(caller, r));
    if (filter.type) all = all.filter((r) => (filter.type === 'organisation') === (r.workspace_id === null));
    if (filter.workspace_id !== undefined) {
      const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, filter.workspace_id);
      all = ws
        ? all.filter((r) => r.workspace_id === ws.id || (r.workspace_id === null && (r.global_workspace_access || r.workspace_ids.includes(ws.id))))
        : [];
    }
    const q = filter.search?.toLowerCase();
    return q ? all.filter((r) => r.name.toLowerCase().includes(q) || r.slug.toLowerCase().includes(q)) : all;
  }

  async update(caller: Principal, idOrSlug: string, body: UpdateMcpIntegrationBody): Promise<void> {
    const current = await this.writable(caller, idOrSlug);
    const problems: FieldProblem[] = [];
    if (body.url !== undefined) this.#checkUrl(body.url, problems);
    const authType = body.auth_type ?? current.auth_type;
    const next: McpIntegrationRecord = {
      ...current,
      name: body.name ?? current.name,
      description: body.description !== undefined ? body.description : current.description,
      url: body.url ?? current.url,
      auth_type: authType,
      transport: body.transport ?? current.transport,
      last_updated_at: nowIso(this.#deps),
      last_updated_by: caller.userId ?? caller.keyId,
    };
    if (body.configurations !== undefined) {
      // The configurations are replaced as a whole: what is not sent is removed, secrets included.
      const split = splitConfigurations(body.configurations, authType, problems);
      next.configurations = split.plain;
      next.masked_configurations = split.masked;
      next.secret = await sealMcpSecrets(this.#deps.cipher, current.organisation_id, current.id, split.secrets);
      next.new_capabilities_enabled = body.configurations.new_capabilities_enabled ?? current.new_capabilities_enabled;
    } else if (authType === 'headers' && Object.keys((await openMcpSecrets(this.#deps.cipher, current)).headers).length === 0) {
      problems.push({ path: 'configurations.custom_headers', message: 'must name at least one header when auth_type is headers' });
    }
    if (problems.length) throw new ValidationError(problems);
    auditTarget(current.id, current.workspace_id);
    await this.repo.updateIntegration(next);
    const reached = body.url !== undefined || body.transport !== undefined || body.auth_type !== undefined || body.configurations !== undefined;
    if (reached) await requestSync(this.#deps, current.organisation_id, current.id);
  }

  async delete(caller: Principal, idOrSlug: string): Promise<void> {
    const rec = await this.writable(caller, idOrSlug);
    auditTarget(rec.id, rec.workspace_id);
    await this.repo.deleteIntegration(rec);
  }

  /** Sets `enabled` of the named capabilities; each must be one the integration has. */
  async updateCapabilities(caller: Principal, idOrSlug: string, body: CapabilitiesUpdateBody): Promise<void> {
    const rec = await this.writable(caller, idOrSlug);
    const stored = await this.repo.getCapabilities(rec.organisation_id, rec.id);
    const now = nowIso(this.#deps);
    const next = applyCapabilityChoices(stored, body, (c, enabled) => ({ ...c, enabled, last_updated_at: now }));
    auditTarget(rec.id, rec.workspace_id);
    await this.repo.putCapabilities(rec.organisation_id, rec.id, next, now);
  }
}

/**
 * The list with each chosen capability changed by `change`; a name the list does not hold is a
 * problem naming its index (a sync must have found a capability before it can be chosen).
 */
export function applyCapabilityChoices<T extends Pick<McpCapability, 'type' | 'name'>>(
  stored: readonly T[],
  body: CapabilitiesUpdateBody,
  change: (c: T, enabled: boolean) => T,
): T[] {
  const index = new Map(stored.map((c, i) => [`${c.type}:${c.name}`, i]));
  const next = [...stored];
  const problems: FieldProblem[] = [];
  body.capabilities.forEach((choice, i) => {
    const at = index.get(`${choice.type}:${choice.name}`);
    if (at === undefined)
      problems.push({ path: `capabilities[${i}].name`, message: `no ${choice.type} "${choice.name}" was discovered on this MCP server; sync first` });
    else next[at] = change(next[at]!, choice.enabled);
  });
  if (problems.length) throw new ValidationError(problems);
  return next;
}
