/**
 * MCP server rules. A server is one workspace's instance of an MCP integration the workspace may
 * use, reached by the gateway at `/mcp/{slug}` (slug unique in the organisation). Its capabilities
 * can only narrow the integration's: one disabled on the integration stays disabled. Workspace
 * managers manage their workspace's servers while `managersWriteMcpServers` allows it (rbac.ts).
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { NotFoundError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { IdentityRepository } from '../../store/identity.ts';
import {
  capabilityKey,
  effectiveCapabilities,
  integrationAllows,
  McpRepository,
  type McpCapability,
  type McpIntegrationRecord,
  type McpServerRecord,
} from '../../store/mcp.ts';
import { createWithSlug, slugFrom } from '../integrations/common.ts';
import { McpIntegrationService, applyCapabilityChoices } from '../mcp-integrations/service.ts';
import type { CapabilitiesUpdateBody } from '../mcp-integrations/schema.ts';
import type { CreateMcpServerBody, UpdateMcpServerBody, UserAccessUpdateBody } from './schema.ts';

export function toServerView(s: McpServerRecord, integration?: McpIntegrationRecord) {
  return {
    object: 'mcp-server' as const,
    id: s.id,
    slug: s.slug,
    name: s.name,
    description: s.description,
    status: s.status,
    organisation_id: s.organisation_id,
    workspace_id: s.workspace_id,
    owner_id: s.created_by,
    mcp_integration_id: s.mcp_integration_id,
    mcp_integration_slug: integration?.slug ?? null,
    mcp_integration_url: integration?.url ?? null,
    auth_type: integration?.auth_type ?? null,
    default_user_access: s.default_user_access,
    created_at: s.created_at,
    last_updated_at: s.last_updated_at,
  };
}

const nowIso = (deps: CoreDeps) => new Date(deps.clock.now()).toISOString();

export class McpServerService {
  readonly #deps: CoreDeps;
  readonly repo: McpRepository;
  readonly integrations: McpIntegrationService;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.repo = new McpRepository(deps.repos.table);
    this.integrations = new McpIntegrationService(deps);
  }

  async #workspaceFor(caller: Principal, requested: string | undefined): Promise<string> {
    if (requested === undefined) {
      if (caller.workspaceId !== null && !isOrganisationPrincipal(caller)) return caller.workspaceId;
      throw ValidationError.field('workspace_id', 'is required when the caller is an organisation key');
    }
    const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, requested);
    if (!ws || (!isOrganisationPrincipal(caller) && ws.id !== caller.workspaceId)) {
      throw new NotFoundError(`Workspace ${requested} not found`, { param: 'workspace_id' });
    }
    return ws.id;
  }

  async create(caller: Principal, body: CreateMcpServerBody): Promise<{ id: string; slug: string }> {
    const workspaceId = await this.#workspaceFor(caller, body.workspace_id);
    const integration = await this.repo.resolveIntegration(caller.organisationId, body.mcp_integration_id);
    if (!integration) throw new NotFoundError(`MCP integration ${body.mcp_integration_id} not found`, { param: 'mcp_integration_id' });
    if (!integrationAllows(integration, workspaceId)) {
      throw ValidationError.field('mcp_integration_id', `MCP integration ${integration.slug} is not available to workspace ${workspaceId}`);
    }
    const now = nowIso(this.#deps);
    const base: Omit<McpServerRecord, 'slug'> = {
      id: randomUUID(),
      organisation_id: caller.organisationId,
      workspace_id: workspaceId,
      name: body.name,
      description: body.description ?? null,
      mcp_integration_id: integration.id,
      capability_overrides: {},
      default_user_access: body.default_user_access ?? 'allow',
      user_access: {},
      status: 'active',
      created_at: now,
      last_updated_at: now,
      created_by: caller.userId ?? caller.keyId,
      last_updated_by: null,
    };
    auditTarget(base.id, workspaceId);
    const slug = await createWithSlug(body.slug ?? slugFrom(body.name, 'mcp'), body.slug === undefined, (s) =>
      this.repo.createServer({ ...base, slug: s }).then(() => s),
    );
    return { id: base.id, slug };
  }

  /** A server of the caller's workspace (any, for owners and admins), by id or slug; 404 otherwise. */
  async get(caller: Principal, idOrSlug: string): Promise<McpServerRecord> {
    const rec = await this.repo.resolveServer(caller.organisationId, idOrSlug);
    if (!rec || (!isOrganisationPrincipal(caller) && rec.workspace_id !== caller.workspaceId)) throw new NotFoundError(`MCP server ${idOrSlug} not found`);
    return rec;
  }

  async list(caller: Principal, filter: { workspace_id?: string | undefined; search?: string | undefined }): Promise<McpServerRecord[]> {
    let workspaceId = isOrganisationPrincipal(caller) ? undefined : (caller.workspaceId ?? '');
    if (filter.workspace_id !== undefined) {
      const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, filter.workspace_id);
      if (!ws || (workspaceId !== undefined && ws.id !== workspaceId)) return [];
      workspaceId = ws.id;
    }
    const all = await this.repo.listServers(caller.organisationId, workspaceId);
    const q = filter.search?.toLowerCase();
    return q ? all.filter((s) => s.name.toLowerCase().includes(q) || s.slug.toLowerCase().includes(q)) : all;
  }

  async update(caller: Principal, idOrSlug: string, body: UpdateMcpServerBody): Promise<void> {
    const current = await this.get(caller, idOrSlug);
    await this.#save(caller, {
      ...current,
      name: body.name ?? current.name,
      description: body.description !== undefined ? body.description : current.description,
    });
  }

  async #save(caller: Principal, next: McpServerRecord): Promise<void> {
    auditTarget(next.id, next.workspace_id);
    await this.repo.updateServer({ ...next, last_updated_at: nowIso(this.#deps), last_updated_by: caller.userId ?? caller.keyId });
  }

  async delete(caller: Principal, idOrSlug: string): Promise<void> {
    const rec = await this.get(caller, idOrSlug);
    auditTarget(rec.id, rec.workspace_id);
    await this.repo.deleteServer(rec);
  }

  /** The integration's capabilities as this server sees them (`integration_enabled`: the integration's choice). */
  async capabilities(caller: Principal, idOrSlug: string): Promise<Array<McpCapability & { integration_enabled: boolean }>> {
    const server = await this.get(caller, idOrSlug);
    const caps = await this.repo.getCapabilities(server.organisation_id, server.mcp_integration_id);
    const effective = effectiveCapabilities(caps, server.capability_overrides);
    return effective.map((c, i) => ({ ...c, integration_enabled: caps[i]!.enabled }));
  }

  /** A server may disable what its integration enables, and enable it again; never more. */
  async updateCapabilities(caller: Principal, idOrSlug: string, body: CapabilitiesUpdateBody): Promise<void> {
    const server = await this.get(caller, idOrSlug);
    const caps = await this.repo.getCapabilities(server.organisation_id, server.mcp_integration_id);
    const problems: FieldProblem[] = [];
    body.capabilities.forEach((choice, i) => {
      const cap = caps.find((c) => c.type === choice.type && c.name === choice.name);
      if (cap && choice.enabled && !cap.enabled)
        problems.push({
          path: `capabilities[${i}].enabled`,
          message: `${choice.type} "${choice.name}" is disabled on the MCP integration; a server can only narrow it`,
        });
    });
    if (problems.length) throw new ValidationError(problems);
    const overrides = { ...server.capability_overrides };
    applyCapabilityChoices(caps, body, (c, enabled) => {
      // Only a disabling choice is kept: enabled means "as the integration says".
      if (enabled) delete overrides[capabilityKey(c)];
      else overrides[capabilityKey(c)] = false;
      return c;
    });
    await this.#save(caller, { ...server, capability_overrides: overrides });
  }

  async userAccess(caller: Principal, idOrSlug: string, search: string | undefined) {
    const server = await this.get(caller, idOrSlug);
    const users = await new IdentityRepository(this.#deps.repos.table).listUsers(server.organisation_id);
    const connected = new Set((await this.repo.listConnections(server.organisation_id, server.id)).map((c) => c.user_id));
    const q = search?.toLowerCase();
    const listed = q ? users.filter((u) => [u.email, u.first_name, u.last_name].some((v) => v?.toLowerCase().includes(q))) : users;
    const data = listed.map((u) => {
      const override = server.user_access[u.id];
      return {
        user_id: u.id,
        first_name: u.first_name,
        last_name: u.last_name,
        enabled: (override ?? server.default_user_access) === 'allow',
        has_override: override !== undefined,
        connection_status: connected.has(u.id) ? ('connected' as const) : ('not_connected' as const),
      };
    });
    return { data, default_user_access: server.default_user_access };
  }

  async updateUserAccess(caller: Principal, idOrSlug: string, body: UserAccessUpdateBody): Promise<void> {
    const server = await this.get(caller, idOrSlug);
    const identity = new IdentityRepository(this.#deps.repos.table);
    const problems: FieldProblem[] = [];
    const access = { ...server.user_access };
    for (const [i, item] of (body.user_access ?? []).entries()) {
      if (!(await identity.getUser(server.organisation_id, item.user_id)))
        problems.push({ path: `user_access[${i}].user_id`, message: `no user "${item.user_id}" in this organisation` });
      else access[item.user_id] = item.enabled ? 'allow' : 'deny';
    }
    if (problems.length) throw new ValidationError(problems);
    await this.#save(caller, { ...server, user_access: access, default_user_access: body.default_user_access ?? server.default_user_access });
  }
}
