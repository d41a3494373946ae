/**
 * Prompt collections: folders of one workspace, nested by `parent_collection_id`. A collection that
 * still holds prompts or child collections is not deleted (409): nothing may point at a removed one.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ConflictError, ValidationError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { CollectionRepository, type CollectionRecord } from '../../store/prompt-catalog.ts';
import { PromptRepository, type PromptRecord } from '../../store/prompts.ts';
import { createWithSlug, slugFrom } from '../integrations/common.ts';
import { actorOf, isoNow, matches, sees, visibleOr404, workspaceFilter, workspaceFor } from '../prompts/common.ts';
import type { CreateCollectionBody, UpdateCollectionBody } from './schema.ts';

interface Details {
  child_collections_count: number;
  prompts_count: number;
  child_collections_last_updated_at: string | null;
  prompts_last_updated_at: string | null;
}

const latest = (dates: readonly string[]): string | null => (dates.length ? dates.reduce((a, b) => (a > b ? a : b)) : null);

function detailsOf(c: CollectionRecord, all: readonly CollectionRecord[], prompts: readonly PromptRecord[]): Details {
  const children = all.filter((x) => x.parent_collection_id === c.id);
  const inside = prompts.filter((p) => p.collection_id === c.id);
  return {
    child_collections_count: children.length,
    prompts_count: inside.length,
    child_collections_last_updated_at: latest(children.map((x) => x.last_updated_at)),
    prompts_last_updated_at: latest(inside.map((p) => p.last_updated_at)),
  };
}

const view = (c: CollectionRecord) => {
  const { created_by: _c, ...rest } = c;
  return { object: 'collection' as const, ...rest };
};

export class CollectionService {
  readonly #deps: CoreDeps;
  readonly #repo: CollectionRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#repo = new CollectionRepository(deps.repos.table);
  }

  /** A collection the caller may see, by id or slug; 404 otherwise. */
  async get(caller: Principal, idOrSlug: string, param?: string): Promise<CollectionRecord> {
    return visibleOr404(await this.#repo.resolve(caller.organisationId, idOrSlug), caller, `Collection ${idOrSlug}`, param);
  }

  async create(caller: Principal, body: CreateCollectionBody) {
    const workspaceId = await this.#workspaceOf(caller, body);
    const parent = body.parent_collection_id === undefined ? undefined : await this.get(caller, body.parent_collection_id, 'parent_collection_id');
    if (parent && parent.workspace_id !== workspaceId) throw ValidationError.field('parent_collection_id', 'must be a collection of the same workspace');
    const now = isoNow(this.#deps);
    const base = slugFrom(body.name, 'collection');
    return createWithSlug(base, true, async (slug) => {
      const rec: CollectionRecord = {
        id: randomUUID(),
        slug,
        name: body.name,
        organisation_id: caller.organisationId,
        workspace_id: workspaceId,
        parent_collection_id: parent?.id ?? null,
        is_default: false,
        status: 'active',
        created_at: now,
        last_updated_at: now,
        created_by: actorOf(caller),
      };
      auditTarget(rec.id, workspaceId);
      await this.#repo.create(rec, parent);
      return { id: rec.id, slug: rec.slug, object: 'collection' };
    });
  }

  /** The workspace named, else the parent's, else the caller's. */
  async #workspaceOf(caller: Principal, body: CreateCollectionBody): Promise<string> {
    if (body.workspace_id === undefined && body.parent_collection_id !== undefined && !caller.workspaceId) {
      return (await this.get(caller, body.parent_collection_id, 'parent_collection_id')).workspace_id;
    }
    return workspaceFor(this.#deps, caller, body.workspace_id);
  }

  async list(caller: Principal, query: URLSearchParams) {
    const ws = await workspaceFilter(this.#deps, caller, query.get('workspace_id'));
    if (ws === null) return [];
    const all = (await this.#repo.list(caller.organisationId)).filter((c) => sees(caller, c.workspace_id));
    const prompts = await new PromptRepository(this.#deps.repos.table).list(caller.organisationId);
    return all
      .filter((c) => (ws === undefined || c.workspace_id === ws) && matches(query.get('search'), c.name))
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
      .map((c) => ({ ...view(c), collection_details: detailsOf(c, all, prompts) }));
  }

  async detail(caller: Principal, idOrSlug: string) {
    const c = await this.get(caller, idOrSlug);
    const all = await this.#repo.list(caller.organisationId);
    const prompts = await new PromptRepository(this.#deps.repos.table).list(caller.organisationId);
    const children = all.filter((x) => x.parent_collection_id === c.id);
    return {
      ...view(c),
      collection_details: detailsOf(c, all, prompts),
      child_collections: children.map((x) => ({
        id: x.id,
        name: x.name,
        slug: x.slug,
        last_updated_at: x.last_updated_at,
        collection_details: detailsOf(x, all, prompts),
      })),
    };
  }

  async update(caller: Principal, idOrSlug: string, body: UpdateCollectionBody): Promise<Record<string, never>> {
    const c = await this.get(caller, idOrSlug);
    auditTarget(c.id, c.workspace_id);
    await this.#repo.update({ ...c, name: body.name, last_updated_at: isoNow(this.#deps) });
    return {};
  }

  async delete(caller: Principal, idOrSlug: string): Promise<Record<string, never>> {
    const c = await this.get(caller, idOrSlug);
    const children = (await this.#repo.list(caller.organisationId)).filter((x) => x.parent_collection_id === c.id);
    const prompts = (await new PromptRepository(this.#deps.repos.table).list(caller.organisationId)).filter((p) => p.collection_id === c.id);
    if (children.length || prompts.length) {
      const held = [...children.map((x) => `collection ${x.slug}`), ...prompts.map((p) => `prompt ${p.slug}`)];
      throw new ConflictError(`Collection ${c.slug} still holds ${held.slice(0, 10).join(', ')}${held.length > 10 ? ', ...' : ''}; move or delete them first`);
    }
    auditTarget(c.id, c.workspace_id);
    await this.#repo.delete(c);
    return {};
  }
}
