/**
 * Labels: of the organisation (usable in every workspace) or of one workspace, plus the universal
 * `production`, `staging` and `development` that every organisation has and nobody changes. Names
 * are unique in the organisation, so `slug@<label>` names one label. A label still on a prompt
 * version is not deleted (409 naming the prompts).
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ConflictError, ForbiddenError, NotFoundError } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { LabelRepository, UNIVERSAL_LABEL_NAMES, universalLabels, type LabelRecord } from '../../store/prompt-catalog.ts';
import { PromptRepository } from '../../store/prompts.ts';
import { isoNow, matches, sees, visibleOr404, workspaceFilter, workspaceFor } from '../prompts/common.ts';
import type { CreateLabelBody, UpdateLabelBody } from './schema.ts';

const view = (l: LabelRecord) => ({ object: 'label' as const, ...l });

export class LabelService {
  readonly #deps: CoreDeps;
  readonly #repo: LabelRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#repo = new LabelRepository(deps.repos.table);
  }

  /** Every label the caller may use: universal, the organisation's, its workspace's (all workspaces for organisation keys). */
  async usable(caller: Principal): Promise<LabelRecord[]> {
    const stored = (await this.#repo.list(caller.organisationId)).filter((l) => sees(caller, l.workspace_id));
    return [...universalLabels(caller.organisationId), ...stored.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))];
  }

  /** A label by id (or by name, as prompt references name them); 404 when the caller may not use it. */
  async get(caller: Principal, idOrName: string, param?: string): Promise<LabelRecord> {
    const universal = universalLabels(caller.organisationId).find((l) => l.id === idOrName || l.name === idOrName);
    if (universal) return universal;
    const byId = await this.#repo.get(caller.organisationId, idOrName);
    const rec = byId ?? (await this.usable(caller)).find((l) => l.name === idOrName);
    return visibleOr404(rec, caller, `Label ${idOrName}`, param);
  }

  async #ownerFor(caller: Principal, body: CreateLabelBody): Promise<string | null> {
    if (body.organisation_id !== undefined && body.organisation_id !== caller.organisationId) {
      throw new NotFoundError(`Organisation ${body.organisation_id} not found`, { param: 'organisation_id' });
    }
    if (body.workspace_id === undefined && isOrganisationPrincipal(caller)) return null;
    return workspaceFor(this.#deps, caller, body.workspace_id);
  }

  async create(caller: Principal, body: CreateLabelBody) {
    if (UNIVERSAL_LABEL_NAMES.has(body.name))
      throw new ConflictError(`"${body.name}" is a universal label; every organisation has it already`, { param: 'name' });
    const workspaceId = await this.#ownerFor(caller, body);
    const now = isoNow(this.#deps);
    const rec: LabelRecord = {
      id: randomUUID(),
      name: body.name,
      description: body.description ?? null,
      color_code: body.color_code ?? null,
      organisation_id: caller.organisationId,
      workspace_id: workspaceId,
      is_universal: false,
      status: 'active',
      created_at: now,
      last_updated_at: now,
    };
    auditTarget(rec.id, workspaceId);
    await this.#repo.create(rec);
    this.#deps.prompts?.invalidate();
    return { id: rec.id, object: 'label' };
  }

  async list(caller: Principal, query: URLSearchParams) {
    const org = query.get('organisation_id');
    if (org !== null && org !== caller.organisationId) return [];
    const ws = await workspaceFilter(this.#deps, caller, query.get('workspace_id'));
    if (ws === null) return [];
    const all = await this.usable(caller);
    return all.filter((l) => (ws === undefined || l.workspace_id === null || l.workspace_id === ws) && matches(query.get('search'), l.name)).map(view);
  }

  async detail(caller: Principal, id: string) {
    return view(await this.get(caller, id));
  }

  /** A stored label the caller may change: workspace keys change their workspace's labels only. */
  async #writable(caller: Principal, id: string): Promise<LabelRecord> {
    const rec = await this.get(caller, id);
    if (rec.is_universal) throw new ForbiddenError(`"${rec.name}" is a universal label; it cannot be changed or deleted`);
    if (rec.workspace_id === null && !isOrganisationPrincipal(caller))
      throw new ForbiddenError('Organisation labels are changed by organisation owners and admins only');
    return rec;
  }

  async update(caller: Principal, id: string, body: UpdateLabelBody): Promise<Record<string, never>> {
    const before = await this.#writable(caller, id);
    if (body.name !== undefined && UNIVERSAL_LABEL_NAMES.has(body.name)) throw new ConflictError(`"${body.name}" is a universal label`, { param: 'name' });
    const next: LabelRecord = {
      ...before,
      name: body.name ?? before.name,
      description: body.description === undefined ? before.description : body.description,
      color_code: body.color_code === undefined ? before.color_code : body.color_code,
      last_updated_at: isoNow(this.#deps),
    };
    auditTarget(next.id, next.workspace_id);
    await this.#repo.update(next, before);
    this.#deps.prompts?.invalidate();
    return {};
  }

  async delete(caller: Principal, id: string): Promise<Record<string, never>> {
    const rec = await this.#writable(caller, id);
    const using = (await new PromptRepository(this.#deps.repos.table).list(caller.organisationId)).filter((p) => p.labels[rec.id] !== undefined);
    if (using.length) {
      const names = using.map((p) => `${p.slug}@${p.labels[rec.id]}`);
      throw new ConflictError(
        `Label ${rec.name} is still on ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', ...' : ''}; move it off those versions first`,
      );
    }
    auditTarget(rec.id, rec.workspace_id);
    await this.#repo.delete(rec);
    this.#deps.prompts?.invalidate();
    return {};
  }
}
