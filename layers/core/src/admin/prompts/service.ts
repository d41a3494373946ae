/**
 * Prompts: a head (name, collection, published version, label pointers) over immutable versions.
 * A create makes version 1 and publishes it; an update with version fields makes the next version
 * (published only by makeDefault); `patch: true` takes absent version fields from the latest one.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ValidationError, type FieldProblem } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { CollectionRepository, LabelRepository, type CollectionRecord } from '../../store/prompt-catalog.ts';
import { PromptRepository, type PromptRecord, type PromptVersionRecord } from '../../store/prompts.ts';
import { CollectionService } from '../collections/service.ts';
import { createWithSlug, slugFrom } from '../integrations/common.ts';
import { LabelService } from '../labels/service.ts';
import { actorOf, isoNow, matches, workspaceFilter } from './common.ts';
import { VERSION_FIELDS, type CreatePromptBody, type UpdatePromptBody } from './schema.ts';
import { VersionedAdmin } from './versioned.ts';

/** DynamoDB holds 400 KB an item: a version is refused well before. */
const MAX_VERSION_CHARS = 300_000;

type VersionFields = Omit<PromptVersionRecord, 'id' | 'version' | 'prompt_id' | 'created_at' | 'created_by'>;

const BLANK: VersionFields = {
  string: '',
  parameters: {},
  model: null,
  provider: null,
  virtual_key: null,
  functions: null,
  tools: null,
  tool_choice: null,
  is_raw_template: false,
  template_metadata: {},
  version_description: null,
};

/** Managed provider slugs are stored with their `@`, as the gateway names them. */
const atSlug = (s: string | null | undefined): string | null | undefined => (typeof s === 'string' && !s.startsWith('@') ? `@${s}` : s);

function checkedSize(v: PromptVersionRecord): PromptVersionRecord {
  if (JSON.stringify(v).length > MAX_VERSION_CHARS) throw ValidationError.field('', `the version is larger than ${MAX_VERSION_CHARS} characters of JSON`);
  return v;
}

/** The version fields of an update: the body's over the latest version's (`patch`) or over blanks. */
export function nextVersionFields(body: UpdatePromptBody, latest: VersionFields): VersionFields {
  const metadata = body.template_metadata ?? body.prompt_metadata;
  if (!body.patch) {
    const missing: FieldProblem[] = (['string', 'parameters', 'model'] as const)
      .filter((f) => body[f] === undefined)
      .map((path) => ({ path, message: 'is required for a new version unless "patch": true' }));
    if (metadata === undefined)
      missing.push({ path: 'template_metadata', message: 'is required for a new version unless "patch": true (prompt_metadata is accepted too)' });
    if (missing.length) throw new ValidationError(missing);
  }
  const base = body.patch ? latest : BLANK;
  const pick = <K extends keyof VersionFields>(k: K, v: VersionFields[K] | undefined): VersionFields[K] => (v === undefined ? base[k] : v);
  const providerGiven = body.provider !== undefined || body.virtual_key !== undefined;
  return {
    string: pick('string', body.string),
    parameters: pick('parameters', body.parameters),
    model: pick('model', body.model),
    provider: providerGiven ? (atSlug(body.provider) ?? null) : base.provider,
    virtual_key: providerGiven ? (body.virtual_key ?? null) : base.virtual_key,
    functions: pick('functions', body.functions),
    tools: pick('tools', body.tools),
    tool_choice: pick('tool_choice', body.tool_choice),
    is_raw_template: pick('is_raw_template', body.is_raw_template),
    template_metadata: pick('template_metadata', metadata),
    version_description: pick('version_description', body.version_description),
  };
}

const labelsOn = (head: PromptRecord, n: number): string[] =>
  Object.entries(head.labels)
    .filter(([, v]) => v === n)
    .map(([id]) => id);

const status = (head: PromptRecord, v: PromptVersionRecord) => (v.version === head.default_version ? 'published' : 'draft');

export function promptView(head: PromptRecord, v: PromptVersionRecord) {
  const labels = labelsOn(head, v.version);
  return {
    object: 'prompt' as const,
    id: head.id,
    slug: head.slug,
    name: head.name,
    collection_id: head.collection_id,
    workspace_id: head.workspace_id,
    string: v.string,
    parameters: v.parameters,
    model: v.model,
    provider: v.provider,
    virtual_key: v.virtual_key,
    functions: v.functions,
    tools: v.tools,
    tool_choice: v.tool_choice,
    is_raw_template: v.is_raw_template,
    template_metadata: v.template_metadata,
    prompt_version: v.version,
    prompt_version_id: v.id,
    prompt_version_status: status(head, v),
    prompt_version_description: v.version_description,
    prompt_version_label_id: labels[0] ?? null,
    prompt_version_labels: labels,
    default_version: head.default_version,
    latest_version: head.latest_version,
    status: head.status,
    created_at: head.created_at,
    last_updated_at: head.last_updated_at,
  };
}

export function versionSummary(head: PromptRecord, v: PromptVersionRecord) {
  const { id, version, prompt_id, created_at, created_by: _c, version_description, ...template } = v;
  const labels = labelsOn(head, version);
  return {
    object: 'prompt' as const,
    id,
    prompt_id,
    prompt_version: version,
    prompt_description: version_description,
    prompt_template: template,
    label_id: labels[0] ?? null,
    labels,
    status: status(head, v),
    created_at,
  };
}

export class PromptService {
  readonly #deps: CoreDeps;
  readonly admin: VersionedAdmin<PromptRecord, PromptVersionRecord>;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.admin = new VersionedAdmin(deps, new PromptRepository(deps.repos.table), 'Prompt');
  }

  #collection(caller: Principal, idOrSlug: string): Promise<CollectionRecord> {
    return new CollectionService(this.#deps).get(caller, idOrSlug, 'collection_id');
  }

  async create(caller: Principal, body: CreatePromptBody) {
    const collection = await this.#collection(caller, body.collection_id);
    const now = isoNow(this.#deps);
    const fields = nextVersionFields({ ...body, patch: true }, BLANK);
    return createWithSlug(slugFrom(body.name, 'prompt'), true, async (slug) => {
      const head: PromptRecord = {
        id: randomUUID(),
        slug,
        organisation_id: caller.organisationId,
        workspace_id: collection.workspace_id,
        collection_id: collection.id,
        name: body.name,
        status: 'active',
        latest_version: 1,
        default_version: 1,
        revision: 1,
        labels: {},
        created_at: now,
        last_updated_at: now,
        created_by: actorOf(caller),
        last_updated_by: actorOf(caller),
      };
      const first = checkedSize({ id: randomUUID(), prompt_id: head.id, version: 1, ...fields, created_at: now, created_by: actorOf(caller) });
      auditTarget(head.id, head.workspace_id);
      await this.admin.repo.create(head, first, [new CollectionRepository(this.#deps.repos.table).existsCheck(collection)]);
      this.#deps.prompts?.invalidate();
      return { id: head.id, slug: head.slug, version_id: first.id, object: 'prompt' };
    });
  }

  async list(caller: Principal, query: URLSearchParams): Promise<PromptRecord[]> {
    const ws = await workspaceFilter(this.#deps, caller, query.get('workspace_id'));
    const collectionRef = query.get('collection_id');
    if (ws === null) return [];
    const collection =
      collectionRef === null ? undefined : await new CollectionRepository(this.#deps.repos.table).resolve(caller.organisationId, collectionRef);
    if (collectionRef !== null && !collection) return [];
    return (await this.admin.list(caller)).filter(
      (p) => (ws === undefined || p.workspace_id === ws) && (!collection || p.collection_id === collection.id) && matches(query.get('search'), p.name),
    );
  }

  /** The list's summaries: the published version's model beside the head. */
  async summaries(heads: readonly PromptRecord[]) {
    return Promise.all(
      heads.map(async (h) => {
        const v = await this.admin.repo.version(h.id, h.default_version);
        const { labels: _l, revision: _r, organisation_id: _o, created_by: _c, last_updated_by: _u, ...rest } = h;
        return { object: 'prompt' as const, ...rest, model: v?.model ?? null };
      }),
    );
  }

  async detail(caller: Principal, idOrSlug: string, versionKey?: string) {
    const head = await this.admin.get(caller, idOrSlug);
    return promptView(head, await this.admin.version(head, versionKey ?? head.default_version));
  }

  async versions(caller: Principal, idOrSlug: string) {
    const head = await this.admin.get(caller, idOrSlug);
    return (await this.admin.repo.versions(head.id)).map((v) => versionSummary(head, v));
  }

  async update(caller: Principal, idOrSlug: string, body: UpdatePromptBody) {
    const head = await this.admin.get(caller, idOrSlug);
    const collection = body.collection_id === undefined ? undefined : await this.#collection(caller, body.collection_id);
    if (collection && collection.workspace_id !== head.workspace_id)
      throw ValidationError.field('collection_id', 'must be a collection of the prompt’s workspace');
    const also = collection ? [new CollectionRepository(this.#deps.repos.table).existsCheck(collection)] : [];
    const change: Partial<PromptRecord> = { ...(body.name !== undefined ? { name: body.name } : {}), ...(collection ? { collection_id: collection.id } : {}) };
    auditTarget(head.id, head.workspace_id);
    if (!VERSION_FIELDS.some((f) => body[f] !== undefined)) {
      await this.admin.repo.saveHead(this.admin.next(head, caller, change), head.revision, also);
      this.#deps.prompts?.invalidate();
      const published = await this.admin.version(head, head.default_version);
      return { id: head.id, slug: head.slug, prompt_version_id: published.id, prompt_version: published.version, object: 'prompt' };
    }
    const latest = await this.admin.version(head, head.latest_version);
    const n = head.latest_version + 1;
    const version = checkedSize({
      id: randomUUID(),
      prompt_id: head.id,
      version: n,
      ...nextVersionFields(body, latest),
      created_at: isoNow(this.#deps),
      created_by: actorOf(caller),
    });
    await this.admin.repo.addVersion(this.admin.next(head, caller, { ...change, latest_version: n }), version, head.revision, also);
    this.#deps.prompts?.invalidate();
    return { id: head.id, slug: head.slug, prompt_version_id: version.id, prompt_version: n, object: 'prompt' };
  }

  /** Puts a label on a version; a label is on at most one version of a prompt, so it moves. */
  async label(caller: Principal, idOrSlug: string, versionKey: string, labelRef: string): Promise<Record<string, never>> {
    const head = await this.admin.get(caller, idOrSlug);
    const version = await this.admin.version(head, versionKey);
    const label = await new LabelService(this.#deps).get(caller, labelRef, 'label_id');
    if (label.workspace_id !== null && label.workspace_id !== head.workspace_id)
      throw ValidationError.field('label_id', 'must be a label of the organisation or of the prompt’s workspace');
    const also = label.is_universal ? [] : [new LabelRepository(this.#deps.repos.table).existsCheck(label)];
    auditTarget(head.id, head.workspace_id);
    await this.admin.repo.saveHead(this.admin.next(head, caller, { labels: { ...head.labels, [label.id]: version.version } }), head.revision, also);
    this.#deps.prompts?.invalidate();
    return {};
  }
}
