/**
 * Prompt partials: templates that prompts include (`{{>slug}}`, `{{>slug@2}}`), of one workspace,
 * versioned like prompts. A create makes version 1 and publishes it; a new `string` makes the next
 * version, published by makeDefault.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import type { Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { PartialRepository, type PartialRecord, type PartialVersionRecord } from '../../store/prompts.ts';
import { createWithSlug, slugFrom } from '../integrations/common.ts';
import { actorOf, isoNow, matches, workspaceFilter, workspaceFor } from '../prompts/common.ts';
import { VersionedAdmin } from '../prompts/versioned.ts';
import type { CreatePartialBody, UpdatePartialBody } from './schema.ts';

const state = (head: PartialRecord, v: PartialVersionRecord) => (v.version === head.default_version ? 'published' : 'draft');

export function partialView(head: PartialRecord, v: PartialVersionRecord) {
  return {
    object: 'partial' as const,
    id: head.id,
    slug: head.slug,
    name: head.name,
    workspace_id: head.workspace_id,
    collection_id: null,
    string: v.string,
    version: v.version,
    version_description: v.version_description,
    prompt_partial_version_id: v.id,
    prompt_partial_version_status: state(head, v),
    default_version: head.default_version,
    latest_version: head.latest_version,
    status: head.status,
    created_at: head.created_at,
    last_updated_at: head.last_updated_at,
  };
}

export const partialSummary = (head: PartialRecord) => ({
  object: 'partial' as const,
  id: head.id,
  slug: head.slug,
  name: head.name,
  workspace_id: head.workspace_id,
  collection_id: null,
  status: head.status,
  default_version: head.default_version,
  latest_version: head.latest_version,
  created_at: head.created_at,
  last_updated_at: head.last_updated_at,
});

const versionView = (head: PartialRecord, v: PartialVersionRecord) => ({
  object: 'partial' as const,
  prompt_partial_id: head.id,
  prompt_partial_version_id: v.id,
  slug: head.slug,
  version: v.version,
  string: v.string,
  description: v.version_description,
  prompt_version_status: state(head, v),
  created_at: v.created_at,
});

export class PartialService {
  readonly #deps: CoreDeps;
  readonly admin: VersionedAdmin<PartialRecord, PartialVersionRecord>;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.admin = new VersionedAdmin(deps, new PartialRepository(deps.repos.table), 'Prompt partial');
  }

  async create(caller: Principal, body: CreatePartialBody) {
    const workspaceId = await workspaceFor(this.#deps, caller, body.workspace_id);
    const now = isoNow(this.#deps);
    return createWithSlug(slugFrom(body.name, 'partial'), true, async (slug) => {
      const head: PartialRecord = {
        id: randomUUID(),
        slug,
        organisation_id: caller.organisationId,
        workspace_id: workspaceId,
        name: body.name,
        status: 'active',
        latest_version: 1,
        default_version: 1,
        revision: 1,
        created_at: now,
        last_updated_at: now,
        created_by: actorOf(caller),
        last_updated_by: actorOf(caller),
      };
      const first: PartialVersionRecord = {
        id: randomUUID(),
        partial_id: head.id,
        version: 1,
        string: body.string,
        version_description: body.version_description ?? null,
        created_at: now,
        created_by: actorOf(caller),
      };
      auditTarget(head.id, workspaceId);
      await this.admin.repo.create(head, first);
      this.#deps.prompts?.invalidate();
      return { id: head.id, slug: head.slug, version_id: first.id, object: 'partial' };
    });
  }

  async list(caller: Principal, query: URLSearchParams) {
    const ws = await workspaceFilter(this.#deps, caller, query.get('workspace_id'));
    if (ws === null) return [];
    return (await this.admin.list(caller))
      .filter((p) => (ws === undefined || p.workspace_id === ws) && matches(query.get('search'), p.name))
      .map(partialSummary);
  }

  async detail(caller: Principal, idOrSlug: string) {
    const head = await this.admin.get(caller, idOrSlug);
    return partialView(head, await this.admin.version(head, head.default_version));
  }

  async versions(caller: Principal, idOrSlug: string) {
    const head = await this.admin.get(caller, idOrSlug);
    return (await this.admin.repo.versions(head.id)).map((v) => versionView(head, v));
  }

  async update(caller: Principal, idOrSlug: string, body: UpdatePartialBody) {
    const head = await this.admin.get(caller, idOrSlug);
    const change: Partial<PartialRecord> = {
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.status !== undefined ? { status: body.status } : {}),
    };
    auditTarget(head.id, head.workspace_id);
    if (body.string === undefined) {
      await this.admin.repo.saveHead(this.admin.next(head, caller, change), head.revision);
      this.#deps.prompts?.invalidate();
      return { id: head.id, slug: head.slug, prompt_partial_version_id: (await this.admin.version(head, head.default_version)).id, object: 'partial' };
    }
    const n = head.latest_version + 1;
    const version: PartialVersionRecord = {
      id: randomUUID(),
      partial_id: head.id,
      version: n,
      string: body.string,
      version_description: body.description ?? null,
      created_at: isoNow(this.#deps),
      created_by: actorOf(caller),
    };
    await this.admin.repo.addVersion(this.admin.next(head, caller, { ...change, latest_version: n }), version, head.revision);
    this.#deps.prompts?.invalidate();
    return { id: head.id, slug: head.slug, prompt_partial_version_id: version.id, version: n, object: 'partial' };
  }
}
