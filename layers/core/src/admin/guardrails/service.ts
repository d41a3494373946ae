/**
 * Saved guardrails: checks validated by each check's own rules, actions stored in one shape,
 * versioned on every change, of a workspace or of the organisation. Secrets in check parameters
 * (credentials, webhook authorization headers) are masked in every answer; an update that sends a
 * masked value back keeps the stored one.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import type { CheckRef, GuardrailActions } from '../../kernel/guardrails.ts';
import { CHECK_IDS, findCheck } from '../../guardrails/registry.ts';
import { ForbiddenError, NotFoundError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { GuardrailRepository, type GuardrailRecord } from '../../store/guardrails.ts';
import { MASK, maskSecrets } from '../audit-logs/mask.ts';
import type { CheckBody, CreateGuardrailBody, UpdateGuardrailBody } from './schema.ts';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every problem of the checks, named by their place in the body (`checks[0].parameters.operator`). */
export function checkProblems(checks: readonly CheckBody[], at = 'checks'): FieldProblem[] {
  const problems: FieldProblem[] = [];
  checks.forEach((c, i) => {
    const def = findCheck(c.id);
    if (!def) {
      problems.push({ path: `${at}[${i}].id`, message: `unknown check "${c.id}" (known: ${CHECK_IDS.join(', ')})` });
      return;
    }
    for (const p of def.validate(c.parameters ?? {})) {
      problems.push({ path: p.path ? `${at}[${i}].parameters.${p.path}` : `${at}[${i}].parameters`, message: p.message });
    }
  });
  return problems;
}

const DENY_WORDS = ['deny', 'block'];
const PASS_WORDS = ['continue', 'log', 'warn', 'allow'];

/** `on_fail`/`on_success` as stored: an object with feedback, or null; a word only says whether to deny. */
function outcomeAction(raw: unknown, path: string, problems: FieldProblem[]): { feedback?: unknown } | null {
  if (raw === undefined || raw === null || typeof raw === 'string') return null;
  if (isRecord(raw)) return raw.feedback === undefined ? {} : { feedback: raw.feedback };
  problems.push({ path, message: `must be an object ({"feedback": {...}}) or one of ${[...DENY_WORDS, ...PASS_WORDS].join(', ')}` });
  return null;
}

/**
 * Both action shapes of the reference as one: the schema's `{deny, async, on_success, on_fail}`
 * and its examples' `{onFail: "block", message}` / `{on_fail: "deny", on_success: "continue"}`.
 */
export function normaliseActions(raw: Record<string, unknown>, at = 'actions'): GuardrailActions {
  const problems: FieldProblem[] = [];
  const known = ['deny', 'async', 'on_success', 'on_fail', 'onFail', 'onSuccess', 'message'];
  for (const k of Object.keys(raw)) if (!known.includes(k)) problems.push({ path: `${at}.${k}`, message: `unknown key (known: ${known.join(', ')})` });
  for (const k of ['deny', 'async'])
    if (raw[k] !== undefined && typeof raw[k] !== 'boolean') problems.push({ path: `${at}.${k}`, message: 'must be a boolean' });
  const words: boolean[] = [];
  for (const k of ['on_fail', 'onFail', 'on_success', 'onSuccess']) {
    const v = raw[k];
    if (typeof v !== 'string') continue;
    if (![...DENY_WORDS, ...PASS_WORDS].includes(v))
      problems.push({ path: `${at}.${k}`, message: `must be one of ${[...DENY_WORDS, ...PASS_WORDS].join(', ')} (or an object)` });
    else if (k === 'on_fail' || k === 'onFail') words.push(DENY_WORDS.includes(v));
  }
  if (raw.message !== undefined && (typeof raw.message !== 'string' || raw.message.length > 1000))
    problems.push({ path: `${at}.message`, message: 'must be a string of at most 1000 characters' });
  const onFail = outcomeAction(raw.on_fail ?? raw.onFail, `${at}.on_fail`, problems);
  const onSuccess = outcomeAction(raw.on_success ?? raw.onSuccess, `${at}.on_success`, problems);
  if (raw.deny === false && words.includes(true)) problems.push({ path: `${at}.deny`, message: 'is false but on_fail says deny' });
  if (problems.length) throw new ValidationError(problems);
  const actions: GuardrailActions = { deny: raw.deny === true || words.includes(true), async: raw.async === true, on_success: onSuccess, on_fail: onFail };
  if (typeof raw.message === 'string') actions.message = raw.message;
  return actions;
}

/** `incoming` with every masked value (`****`) put back from `stored` at the same place. */
export function restoreMasked(incoming: unknown, stored: unknown): unknown {
  if (incoming === MASK && stored !== undefined) return stored;
  if (isRecord(incoming) && isRecord(stored)) {
    return Object.fromEntries(Object.entries(incoming).map(([k, v]) => [k, restoreMasked(v, stored[k])]));
  }
  return incoming;
}

function toCheckRefs(checks: readonly CheckBody[], stored: readonly CheckRef[] = []): CheckRef[] {
  const refs = checks.map((c, i) => {
    const before = stored[i]?.id === c.id ? stored[i]?.parameters : undefined;
    const parameters = (restoreMasked(c.parameters ?? {}, before) ?? {}) as Record<string, unknown>;
    return c.is_enabled === undefined ? { id: c.id, parameters } : { id: c.id, parameters, is_enabled: c.is_enabled };
  });
  const problems = checkProblems(refs);
  if (problems.length) throw new ValidationError(problems);
  return refs;
}

const slugFor = (): string => `guard_${randomBytes(6).toString('hex')}`;

export interface GuardrailView {
  object: 'guardrail';
  id: string;
  slug: string;
  name: string;
  organisation_id: string;
  workspace_id: string | null;
  status: string;
  version_id: string;
  created_at: string;
  last_updated_at: string;
  owner_id: string | null;
  updated_by: string | null;
  checks?: CheckRef[];
  actions?: GuardrailActions;
}

export function summaryView(r: GuardrailRecord): GuardrailView {
  const { checks: _c, actions: _a, version: _v, ...rest } = r;
  return { object: 'guardrail', ...rest };
}

export const detailView = (r: GuardrailRecord): GuardrailView => ({
  ...summaryView(r),
  checks: r.checks.map((c) => ({ ...c, parameters: maskSecrets(c.parameters) as Record<string, unknown> })),
  actions: r.actions,
});

export class GuardrailService {
  readonly #deps: CoreDeps;
  readonly #repo: GuardrailRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#repo = new GuardrailRepository(deps.repos.table);
  }

  /** The workspace (or null: the organisation) a new guardrail belongs to. */
  async #ownerFor(caller: Principal, body: CreateGuardrailBody): Promise<string | null> {
    if (body.organisation_id !== undefined && body.organisation_id !== caller.organisationId) {
      throw new NotFoundError(`Organisation ${body.organisation_id} not found`, { param: 'organisation_id' });
    }
    if (body.workspace_id === undefined) {
      if (!isOrganisationPrincipal(caller)) return caller.workspaceId;
      if (body.organisation_id !== undefined) return null;
      throw ValidationError.field('workspace_id', 'workspace_id or organisation_id is required when the caller is an organisation key');
    }
    const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, body.workspace_id);
    if (!ws) throw new NotFoundError(`Workspace ${body.workspace_id} not found`, { param: 'workspace_id' });
    if (!isOrganisationPrincipal(caller) && caller.workspaceId !== ws.id)
      throw new ForbiddenError('Workspace keys may only manage guardrails of their own workspace');
    return ws.id;
  }

  async create(caller: Principal, body: CreateGuardrailBody) {
    const checks = toCheckRefs(body.checks);
    const actions = normaliseActions(body.actions);
    const workspaceId = await this.#ownerFor(caller, body);
    const now = new Date(this.#deps.clock.now()).toISOString();
    const rec: GuardrailRecord = {
      id: randomUUID(),
      slug: slugFor(),
      name: body.name,
      organisation_id: caller.organisationId,
      workspace_id: workspaceId,
      status: 'active',
      checks,
      actions,
      version: 1,
      version_id: randomUUID(),
      created_at: now,
      last_updated_at: now,
      owner_id: caller.userId ?? caller.keyId,
      updated_by: null,
    };
    auditTarget(rec.id, rec.workspace_id);
    await this.#repo.create(rec);
    this.#deps.guardrails?.invalidate();
    return { id: rec.id, slug: rec.slug, version_id: rec.version_id };
  }

  /** A guardrail the caller may see (its workspace's or the organisation's), by id or slug; 404 otherwise. */
  async get(caller: Principal, idOrSlug: string): Promise<GuardrailRecord> {
    const rec = await this.#repo.resolve(caller.organisationId, idOrSlug);
    if (!rec || (!isOrganisationPrincipal(caller) && rec.workspace_id !== null && rec.workspace_id !== caller.workspaceId)) {
      throw new NotFoundError(`Guardrail ${idOrSlug} not found`);
    }
    return rec;
  }

  async #writable(caller: Principal, idOrSlug: string): Promise<GuardrailRecord> {
    const rec = await this.get(caller, idOrSlug);
    if (rec.workspace_id === null && !isOrganisationPrincipal(caller))
      throw new ForbiddenError('Organisation guardrails are changed by organisation owners and admins only');
    return rec;
  }

  async list(caller: Principal, filter: { workspace_id?: string | undefined; organisation_id?: string | undefined }): Promise<GuardrailRecord[]> {
    if (filter.organisation_id !== undefined && filter.organisation_id !== caller.organisationId) return [];
    const all = (await this.#repo.list(caller.organisationId)).filter(
      (r) => isOrganisationPrincipal(caller) || r.workspace_id === null || r.workspace_id === caller.workspaceId,
    );
    if (filter.workspace_id === undefined) return all;
    const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, filter.workspace_id);
    return ws ? all.filter((r) => r.workspace_id === ws.id) : [];
  }

  async update(caller: Principal, idOrSlug: string, body: UpdateGuardrailBody) {
    const current = await this.#writable(caller, idOrSlug);
    const next: GuardrailRecord = {
      ...current,
      name: body.name ?? current.name,
      status: body.status ?? current.status,
      checks: body.checks ? toCheckRefs(body.checks, current.checks) : current.checks,
      actions: body.actions ? normaliseActions(body.actions) : current.actions,
      version: current.version + 1,
      version_id: randomUUID(),
      last_updated_at: new Date(this.#deps.clock.now()).toISOString(),
      updated_by: caller.userId ?? caller.keyId,
    };
    auditTarget(next.id, next.workspace_id);
    await this.#repo.update(next, current.version);
    this.#deps.guardrails?.invalidate();
    return { id: next.id, slug: next.slug, version_id: next.version_id };
  }

  async delete(caller: Principal, idOrSlug: string): Promise<void> {
    const rec = await this.#writable(caller, idOrSlug);
    auditTarget(rec.id, rec.workspace_id);
    await this.#repo.delete(rec);
    this.#deps.guardrails?.invalidate();
  }
}
