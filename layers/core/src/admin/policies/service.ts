/**
 * Rate limits and usage limits policies: who may manage which, what a policy may say, and what
 * changing one does to its counters and alerts. A policy belongs to one workspace and applies to
 * that workspace's gateway requests whose conditions hold; a rate limits policy created by an
 * organisation key without a workspace applies to every workspace of the organisation. What
 * differs between the kinds is data (kinds.ts); this service is written once over it.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ForbiddenError, NotFoundError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { currentPeriod } from '../../policy/limits/hook.ts';
import type { PolicyCondition } from '../../policy/limits/match.ts';
import type { PolicyStatus, RateLimitPolicyRecord, UsageLimitPolicyRecord } from '../../store/limits.ts';
import {
  entityView,
  RATE_LIMITS,
  USAGE_LIMITS,
  usageOf,
  type CreateCommon,
  type EntityUsage,
  type EntityView,
  type PolicyKind,
  type PolicyRecord,
  type UpdateTools,
} from './kinds.ts';
import type { CreateRateLimitBody, CreateUsageLimitBody, UpdateUsageLimitBody } from './schema.ts';

export { entityView, RATE_OBJECT, rateView, USAGE_OBJECT, usageView } from './kinds.ts';
export type { EntityUsage, EntityView, RateLimitPolicyView, UsageLimitPolicyView } from './kinds.ts';

/** With an API key, the key's workspace and organisation stand in for absent `workspace_id` and `organisation_id`. */
const viaApiKey = (p: Principal): boolean => p.kind === 'api-key';

export interface ListFilter {
  workspace_id?: string | undefined;
  status: PolicyStatus;
}

/** A `workspace_id` condition naming one workspace (not `*`): where an organisation key's policy belongs. */
const workspaceCondition = (conditions: readonly PolicyCondition[]): string | undefined =>
  conditions.find((c) => c.key === 'workspace_id' && c.value !== '*')?.value;

export class PolicyService {
  readonly #deps: CoreDeps;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
  }

  get #repo() {
    return this.#deps.limits.repo;
  }

  #now(): string {
    return new Date(this.#deps.clock.now()).toISOString();
  }

  /** Drops cached policies: one workspace's, or every workspace's for an organisation-wide policy. */
  #invalidate(workspaceId: string | null): void {
    this.#deps.limits.policies.invalidate(workspaceId ?? undefined);
  }

  /**
   * The workspace (id) a new policy belongs to, or null for an organisation-wide one. With an API
   * key: the body's `workspace_id`, else the key's workspace, else a `workspace_id` condition, else
   * (rate limits only) the whole organisation. Without one, docs/design/spec.md#admin-resources requires both ids.
   */
  async #owner(organisationWide: boolean, caller: Principal, body: CreateCommon): Promise<string | null> {
    const problems: FieldProblem[] = [];
    const fromCondition = viaApiKey(caller) && organisationWide ? workspaceCondition(body.conditions) : undefined;
    if (!viaApiKey(caller)) {
      if (body.workspace_id === undefined) problems.push({ path: 'workspace_id', message: 'is required when not authenticating with an API key' });
      if (body.organisation_id === undefined) problems.push({ path: 'organisation_id', message: 'is required when not authenticating with an API key' });
    } else if (body.workspace_id === undefined && !caller.workspaceId && fromCondition === undefined && !organisationWide) {
      problems.push({ path: 'workspace_id', message: 'is required when the caller is an organisation key' });
    }
    if (problems.length) throw new ValidationError(problems);
    if (body.organisation_id !== undefined && body.organisation_id !== caller.organisationId) {
      throw new ForbiddenError('organisation_id must be the caller’s own organisation', { param: 'organisation_id' });
    }
    const requested = body.workspace_id ?? caller.workspaceId ?? fromCondition;
    if (!requested) return null;
    const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, requested);
    if (!ws && body.workspace_id === undefined && !caller.workspaceId)
      throw ValidationError.field(`conditions[${body.conditions.findIndex((c) => c.value === requested)}].value`, 'must name a workspace of the organisation');
    if (!ws) throw new NotFoundError(`Workspace ${requested} not found`, { param: 'workspace_id' });
    if (!isOrganisationPrincipal(caller) && caller.workspaceId !== ws.id) {
      throw new ForbiddenError('Workspace keys may only manage policies of their own workspace');
    }
    return ws.id;
  }

  /** Normalizes conditions: workspace slugs become ids; values that could never match are refused. */
  async #conditions(caller: Principal, workspaceId: string | null, list: readonly PolicyCondition[]): Promise<PolicyCondition[]> {
    const problems: FieldProblem[] = [];
    const out: PolicyCondition[] = [];
    for (const [i, c] of list.entries()) {
      let value = c.value;
      if (c.value !== '*' && c.key === 'workspace_id') {
        const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, c.value);
        if (!ws || (workspaceId !== null && ws.id !== workspaceId))
          problems.push({ path: `conditions[${i}].value`, message: 'must name the policy’s own workspace (a policy applies to its workspace only)' });
        else value = ws.id;
      } else if (c.value !== '*' && c.key === 'organisation_id' && c.value !== caller.organisationId) {
        problems.push({ path: `conditions[${i}].value`, message: 'must be the policy’s organisation' });
      } else if (c.value !== '*' && c.key === 'api_key') {
        const key = await this.#deps.repos.apiKeys.getById(caller.organisationId, c.value);
        if (!key || (workspaceId !== null && key.workspace_id !== workspaceId))
          problems.push({ path: `conditions[${i}].value`, message: 'must be the id of an API key of the policy’s workspace' });
      }
      out.push({ key: c.key, value });
    }
    if (problems.length) throw new ValidationError(problems);
    return out;
  }

  #visible(caller: Principal, rec: { workspace_id: string | null; status: PolicyStatus } | undefined, status: PolicyStatus): boolean {
    if (!rec || rec.status !== status) return false;
    return isOrganisationPrincipal(caller) || rec.workspace_id === caller.workspaceId;
  }

  async #listWorkspaceFor(caller: Principal, workspace: string | undefined): Promise<string | undefined> {
    if (workspace === undefined) return isOrganisationPrincipal(caller) ? undefined : (caller.workspaceId ?? undefined);
    const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, workspace);
    if (!ws) throw new NotFoundError(`Workspace ${workspace} not found`, { param: 'workspace_id' });
    if (!isOrganisationPrincipal(caller) && caller.workspaceId !== ws.id) {
      throw new ForbiddenError('Workspace keys may only list policies of their own workspace');
    }
    return ws.id;
  }

  async create<R extends PolicyRecord, C extends CreateCommon, U>(
    kind: PolicyKind<R, C, U>,
    caller: Principal,
    body: C,
  ): Promise<{ id: string; object: string }> {
    const workspaceId = await this.#owner(kind.organisationWide, caller, body);
    const now = this.#now();
    const common: PolicyRecord = {
      id: randomUUID(),
      name: body.name ?? null,
      organisation_id: caller.organisationId,
      workspace_id: workspaceId,
      conditions: await this.#conditions(caller, workspaceId, body.conditions),
      group_by: body.group_by,
      status: 'active',
      created_at: now,
      last_updated_at: now,
      created_by: caller.keyId,
      last_updated_by: caller.keyId,
    };
    const rec = kind.build(common, body, this.#deps.clock.now());
    auditTarget(rec.id, workspaceId);
    await kind.store.create(this.#repo, rec);
    this.#invalidate(workspaceId);
    return { id: rec.id, object: kind.object };
  }

  async get<R extends PolicyRecord, C extends CreateCommon, U>(
    kind: PolicyKind<R, C, U>,
    caller: Principal,
    id: string,
    status: PolicyStatus = 'active',
  ): Promise<R> {
    const rec = await kind.store.get(this.#repo, caller.organisationId, id);
    if (!rec || !this.#visible(caller, rec, status)) throw new NotFoundError(`${kind.label} ${id} not found`);
    return rec;
  }

  async list<R extends PolicyRecord, C extends CreateCommon, U>(
    kind: PolicyKind<R, C, U>,
    caller: Principal,
    filter: ListFilter,
    filters: Record<string, string | undefined> = {},
  ): Promise<R[]> {
    const ws = await this.#listWorkspaceFor(caller, filter.workspace_id);
    const all = ws === undefined ? await kind.store.listOrganisation(this.#repo, caller.organisationId) : await kind.store.listWorkspace(this.#repo, ws);
    return all.filter((p) => p.status === filter.status && kind.matches(p, filters));
  }

  async update<R extends PolicyRecord, C extends CreateCommon, U>(kind: PolicyKind<R, C, U>, caller: Principal, id: string, body: U): Promise<void> {
    const cur = await this.get(kind, caller, id);
    const tools: UpdateTools = {
      nowMs: this.#deps.clock.now(),
      now: this.#now(),
      keyId: caller.keyId,
      conditions: (list) => this.#conditions(caller, cur.workspace_id, list),
      workspaceId: async (idOrSlug) => (await this.#deps.repos.workspaces.resolve(caller.organisationId, idOrSlug))?.id,
    };
    const next = await kind.change(cur, body, tools);
    auditTarget(cur.id, cur.workspace_id);
    await kind.store.put(this.#repo, next);
    await kind.afterChange?.(this.#repo, cur, next, body, tools);
    this.#invalidate(cur.workspace_id);
  }

  async delete<R extends PolicyRecord, C extends CreateCommon, U>(kind: PolicyKind<R, C, U>, caller: Principal, id: string): Promise<void> {
    const cur = await this.get(kind, caller, id);
    auditTarget(cur.id, cur.workspace_id);
    await kind.store.put(this.#repo, { ...cur, status: 'archived', last_updated_at: this.#now(), last_updated_by: caller.keyId });
    this.#invalidate(cur.workspace_id);
  }

  // Named shorthands for the kinds (workers and tests call these).
  createRate = (caller: Principal, body: CreateRateLimitBody) => this.create(RATE_LIMITS, caller, body);
  createUsage = (caller: Principal, body: CreateUsageLimitBody) => this.create(USAGE_LIMITS, caller, body);
  getUsage = (caller: Principal, id: string, status?: PolicyStatus): Promise<UsageLimitPolicyRecord> => this.get(USAGE_LIMITS, caller, id, status);
  getRate = (caller: Principal, id: string, status?: PolicyStatus): Promise<RateLimitPolicyRecord> => this.get(RATE_LIMITS, caller, id, status);
  updateUsage = (caller: Principal, id: string, body: UpdateUsageLimitBody) => this.update(USAGE_LIMITS, caller, id, body);
  deleteUsage = (caller: Principal, id: string) => this.delete(USAGE_LIMITS, caller, id);

  // ---- a budget's groups -----------------------------------------------------------------------

  async usageMap(policy: UsageLimitPolicyRecord): Promise<Record<string, EntityUsage>> {
    const counters = await this.#repo.usageCounters(policy.id, currentPeriod(policy, this.#deps.clock.now()).key);
    return Object.fromEntries(counters.map((c) => [c.value_key, usageOf(policy, c)]));
  }

  /** The groups counted in the current period, with their usage. */
  async entities(caller: Principal, id: string, filter: { status?: 'active' | 'exhausted' | undefined; search?: string | undefined }): Promise<EntityView[]> {
    const policy = await this.getUsage(caller, id);
    const counters = await this.#repo.usageCounters(policy.id, currentPeriod(policy, this.#deps.clock.now()).key);
    const search = filter.search?.toLowerCase();
    return counters
      .map((c) => entityView(policy, c))
      .filter((e) => (!filter.status || e.status === filter.status) && (!search || e.value_key.toLowerCase().includes(search)))
      .sort((a, b) => a.value_key.localeCompare(b.value_key));
  }

  async resetEntity(caller: Principal, id: string, entityId: string): Promise<void> {
    const policy = await this.getUsage(caller, id);
    const done = await this.#repo.resetCounter(policy.id, currentPeriod(policy, this.#deps.clock.now()).key, entityId, this.#now());
    if (!done) throw new NotFoundError(`Entity ${entityId} of usage limits policy ${id} not found`);
  }
}
