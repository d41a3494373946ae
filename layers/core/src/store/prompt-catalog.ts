/**
 * What prompts are filed and marked with: collections (nested by `parent_collection_id`, of one
 * workspace) and labels (of the organisation or of one workspace). A collection's slug and a label's
 * name are claimed by an item of their own, so two creates cannot take the same one. The universal
 * labels (`production`, `staging`, `development`) are not stored: every organisation has them.
 */
import { ConflictError } from '../http/errors.ts';
import { Entity } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { isCancelled } from './versioned.ts';
import { prefixRange } from './prefix-range.ts';

export interface CollectionRecord {
  id: string;
  slug: string;
  name: string;
  organisation_id: string;
  workspace_id: string;
  parent_collection_id: string | null;
  is_default: boolean;
  status: 'active' | 'archived';
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
}

export interface LabelRecord {
  id: string;
  name: string;
  description: string | null;
  color_code: string | null;
  organisation_id: string;
  /** Null for an organisation label (usable in every workspace). */
  workspace_id: string | null;
  is_universal: boolean;
  status: 'active';
  created_at: string;
  last_updated_at: string;
}

const UNIVERSAL: readonly [string, string, string][] = [
  ['00000000-0000-4000-8000-000000000001', 'production', '#16a34a'],
  ['00000000-0000-4000-8000-000000000002', 'staging', '#ca8a04'],
  ['00000000-0000-4000-8000-000000000003', 'development', '#2563eb'],
];

/** The universal labels as an organisation sees them (fixed ids, the same everywhere). */
export function universalLabels(orgId: string): LabelRecord[] {
  return UNIVERSAL.map(([id, name, color]) => ({
    id,
    name,
    description: `Universal label: ${name}`,
    color_code: color,
    organisation_id: orgId,
    workspace_id: null,
    is_universal: true,
    status: 'active',
    created_at: '1970-01-01T00:00:00.000Z',
    last_updated_at: '1970-01-01T00:00:00.000Z',
  }));
}

export const UNIVERSAL_LABEL_NAMES: ReadonlySet<string> = new Set(UNIVERSAL.map(([, name]) => name));

export const Collection = new Entity<CollectionRecord>({
  name: 'Collection',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `COLLECTION#${r.id}` }),
});

export const CollectionSlug = new Entity<{ organisation_id: string; slug: string; collection_id: string }>({
  name: 'CollectionSlug',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `COLLECTIONSLUG#${r.slug}` }),
});

export const Label = new Entity<LabelRecord>({
  name: 'Label',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `LABEL#${r.id}` }),
});

/** Label names are unique in the organisation: `slug@<name>` must name one label. */
export const LabelName = new Entity<{ organisation_id: string; name: string; label_id: string }>({
  name: 'LabelName',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `LABELNAME#${r.name}` }),
});

async function orConflict(run: () => Promise<void>, conflict: () => ConflictError): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (isCancelled(err)) throw conflict();
    throw err;
  }
}

export class CollectionRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  /** A check for a transaction elsewhere: the collection still exists. */
  existsCheck(rec: CollectionRecord) {
    return { ConditionCheck: { TableName: this.#t.tableName, Key: Collection.key(rec), ConditionExpression: 'attribute_exists(pk)' } };
  }

  create(rec: CollectionRecord, parent: CollectionRecord | undefined): Promise<void> {
    const items = [
      this.#t.putIfAbsent(Collection.toItem(rec)),
      this.#t.putIfAbsent(CollectionSlug.toItem({ organisation_id: rec.organisation_id, slug: rec.slug, collection_id: rec.id })),
      ...(parent ? [this.existsCheck(parent)] : []),
    ];
    return orConflict(
      () => this.#t.transact(items),
      () => new ConflictError(`A collection with slug "${rec.slug}" already exists, or its parent was removed meanwhile`, { param: 'slug' }),
    );
  }

  async resolve(orgId: string, idOrSlug: string): Promise<CollectionRecord | undefined> {
    const claim = await this.#t.get(CollectionSlug, { pk: `ORG#${orgId}`, sk: `COLLECTIONSLUG#${idOrSlug}` }, true);
    return this.#t.get(Collection, { pk: `ORG#${orgId}`, sk: `COLLECTION#${claim ? claim.collection_id : idOrSlug}` }, true);
  }

  list(orgId: string): Promise<CollectionRecord[]> {
    return this.#t.queryAll(Collection, {
      ...prefixRange(`ORG#${orgId}`, 'COLLECTION#'),
      ConsistentRead: true,
    });
  }

  update(rec: CollectionRecord): Promise<void> {
    const put = { Put: { TableName: this.#t.tableName, Item: Collection.toItem(rec), ConditionExpression: 'attribute_exists(pk)' } };
    return orConflict(
      () => this.#t.transact([put]),
      () => new ConflictError('The collection was removed by another request'),
    );
  }

  delete(rec: CollectionRecord): Promise<void> {
    const slug = CollectionSlug.key({ organisation_id: rec.organisation_id, slug: rec.slug, collection_id: rec.id });
    const items = [Collection.key(rec), slug].map((Key) => ({ Delete: { TableName: this.#t.tableName, Key } }));
    return this.#t.transact(items);
  }
}

export class LabelRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  #claim(rec: LabelRecord) {
    return LabelName.toItem({ organisation_id: rec.organisation_id, name: rec.name, label_id: rec.id });
  }

  #taken(name: string): () => ConflictError {
    return () => new ConflictError(`A label named "${name}" already exists in this organisation`, { param: 'name' });
  }

  create(rec: LabelRecord): Promise<void> {
    return orConflict(() => this.#t.transact([this.#t.putIfAbsent(Label.toItem(rec)), this.#t.putIfAbsent(this.#claim(rec))]), this.#taken(rec.name));
  }

  get(orgId: string, id: string): Promise<LabelRecord | undefined> {
    return this.#t.get(Label, { pk: `ORG#${orgId}`, sk: `LABEL#${id}` }, true);
  }

  /** The stored labels of the organisation (the universal ones are not stored). */
  list(orgId: string): Promise<LabelRecord[]> {
    return this.#t.queryAll(Label, {
      ...prefixRange(`ORG#${orgId}`, 'LABEL#'),
      ConsistentRead: true,
    });
  }

  /** Saves a change; a new name claims it and frees the old one in the same transaction. */
  update(rec: LabelRecord, before: LabelRecord): Promise<void> {
    const put = { Put: { TableName: this.#t.tableName, Item: Label.toItem(rec), ConditionExpression: 'attribute_exists(pk)' } };
    const rename =
      rec.name === before.name
        ? []
        : [
            this.#t.putIfAbsent(this.#claim(rec)),
            {
              Delete: { TableName: this.#t.tableName, Key: LabelName.key({ organisation_id: before.organisation_id, name: before.name, label_id: before.id }) },
            },
          ];
    return orConflict(() => this.#t.transact([put, ...rename]), this.#taken(rec.name));
  }

  delete(rec: LabelRecord): Promise<void> {
    const keys = [Label.key(rec), LabelName.key({ organisation_id: rec.organisation_id, name: rec.name, label_id: rec.id })];
    return this.#t.transact(keys.map((Key) => ({ Delete: { TableName: this.#t.tableName, Key } })));
  }

  /** A check for a transaction elsewhere: the label still exists. */
  existsCheck(rec: LabelRecord) {
    return { ConditionCheck: { TableName: this.#t.tableName, Key: Label.key(rec), ConditionExpression: 'attribute_exists(pk)' } };
  }
}
