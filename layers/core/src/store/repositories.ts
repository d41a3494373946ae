/** Repositories: the only code that talks to the table. Multi-item changes are transactions. */
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { auditForTransaction } from './audit-context.ts';
import { ConflictError, NotFoundError } from '../http/errors.ts';
import type { Entity, Item, ItemKey } from './entity.ts';
import {
  ApiKey,
  ApiKeyByHash,
  ApiKeyPreviousHash,
  Bootstrap,
  Organisation,
  Workspace,
  WorkspaceSlug,
  type ApiKeyRecord,
  type BootstrapRecord,
  type OrganisationRecord,
  type WorkspaceRecord,
} from './entities.ts';
import { prefixRange } from './prefix-range.ts';
import { queryAll } from './paginate.ts';
import { ApiKeyIndex, indexWrites } from './api-key-index.ts';
import { batchDelete } from './batch-io.ts';
import { systemClock } from '../ports/clock.ts';

const isCancelled = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'TransactionCanceledException' || err.name === 'ConditionalCheckFailedException');

/** Shared table access; repositories are thin views over it. */
export class TableClient {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  constructor(doc: DynamoDBDocumentClient, tableName: string) {
    this.doc = doc;
    this.tableName = tableName;
  }

  async get<R extends object>(entity: Entity<R>, key: ItemKey, consistent = false): Promise<R | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: consistent }));
    return out.Item ? entity.fromItem(out.Item) : undefined;
  }

  /** Every item of a query, following pagination. */
  async queryAll<R extends object>(entity: Entity<R>, input: Omit<QueryCommandInput, 'TableName'>): Promise<R[]> {
    return (await queryAll(this.doc, { ...input, TableName: this.tableName })).map((item) => entity.fromItem(item));
  }

  /** How many items a gsi1 partition holds, up to `cap` (+1 when there are more): reads at most `cap + 1` items. */
  async countOnIndex(gsi1pk: string, cap: number): Promise<number> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ExpressionAttributeValues: { ':p': gsi1pk },
        Select: 'COUNT',
        Limit: cap + 1,
      }),
    );
    return out.Count ?? 0;
  }

  putIfAbsent(item: Item) {
    return {
      Put: { TableName: this.tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' },
    };
  }

  /**
   * Runs a transaction. Inside an audited admin request (store/audit-context.ts) the request's
   * audit entry is written by the same transaction, so the change and its record commit together.
   */
  async transact(items: NonNullable<TransactWriteCommandInput['TransactItems']>): Promise<void> {
    const audit = items.length < 100 ? auditForTransaction() : undefined;
    const all = audit ? [...items, { Put: { TableName: this.tableName, Item: audit.item } }] : items;
    await this.doc.send(new TransactWriteCommand({ TransactItems: all }));
    audit?.committed();
  }
}

export class OrganisationRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }
  get(id: string): Promise<OrganisationRecord | undefined> {
    return this.#t.get(Organisation, { pk: `ORG#${id}`, sk: 'ORG' });
  }

  /** Saves a changed organisation that exists. */
  async update(org: OrganisationRecord): Promise<void> {
    try {
      await this.#t.transact([{ Put: { TableName: this.#t.tableName, Item: Organisation.toItem(org), ConditionExpression: 'attribute_exists(pk)' } }]);
    } catch (err) {
      if (isCancelled(err)) throw new NotFoundError(`Organisation ${org.id} not found`);
      throw err;
    }
  }
}

/** Items a workspace delete's transaction holds beside the workspace, its slug and the audit entry. */
const TRANSACTION_ROOM = 97;

/** Deletes items 25 a request (batch-io's retries and backoff); fails when some stay undeleted. */
async function deleteKeys(t: TableClient, keys: readonly ItemKey[]): Promise<void> {
  const left = await batchDelete(t.doc, t.tableName, keys, { clock: systemClock });
  if (left.size > 0) throw new Error(`${left.size} item(s) could not be deleted`);
}

export class WorkspaceRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  /** Creates the workspace and claims its slug atomically. */
  async create(ws: WorkspaceRecord, alsoPut: readonly Item[] = []): Promise<void> {
    try {
      await this.#t.transact([
        this.#t.putIfAbsent(Workspace.toItem(ws)),
        this.#t.putIfAbsent(WorkspaceSlug.toItem({ organisation_id: ws.organisation_id, slug: ws.slug, workspace_id: ws.id })),
        ...alsoPut.map((item) => this.#t.putIfAbsent(item)),
      ]);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError(`A workspace with slug "${ws.slug}" already exists`, { param: 'slug' });
      throw err;
    }
  }

  getById(orgId: string, id: string): Promise<WorkspaceRecord | undefined> {
    return this.#t.get(Workspace, { pk: `ORG#${orgId}`, sk: `WS#${id}` });
  }

  /** Every workspace of the organisation, oldest first. */
  async list(orgId: string): Promise<WorkspaceRecord[]> {
    const all = await this.#t.queryAll(Workspace, {
      ...prefixRange(`ORG#${orgId}`, 'WS#'),
      ConsistentRead: true,
    });
    return all.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  /** Saves a changed workspace that exists (its slug never changes). */
  async update(ws: WorkspaceRecord): Promise<void> {
    try {
      await this.#t.transact([{ Put: { TableName: this.#t.tableName, Item: Workspace.toItem(ws), ConditionExpression: 'attribute_exists(pk)' } }]);
    } catch (err) {
      if (isCancelled(err)) throw new NotFoundError(`Workspace ${ws.id} not found`);
      throw err;
    }
  }

  /**
   * Deletes the workspace, its slug and the given items that belong to it. A transaction holds 100
   * items (the audit entry among them): those that do not fit go first, in batches, so that a failure
   * leaves a workspace that the same delete, asked again, removes.
   */
  async delete(ws: WorkspaceRecord, alsoDelete: readonly ItemKey[] = []): Promise<void> {
    const del = (key: ItemKey) => ({ Delete: { TableName: this.#t.tableName, Key: key } });
    const inTransaction = alsoDelete.slice(0, TRANSACTION_ROOM);
    await deleteKeys(this.#t, alsoDelete.slice(TRANSACTION_ROOM));
    await this.#t.transact([
      { Delete: { TableName: this.#t.tableName, Key: Workspace.key(ws), ConditionExpression: 'attribute_exists(pk)' } },
      del({ pk: `ORG#${ws.organisation_id}`, sk: `WSSLUG#${ws.slug}` }),
      ...inTransaction.map(del),
    ]);
  }

  /** Resolves a workspace named by id or slug. */
  async resolve(orgId: string, idOrSlug: string): Promise<WorkspaceRecord | undefined> {
    const byId = await this.getById(orgId, idOrSlug);
    if (byId) return byId;
    const slug = await this.#t.get(WorkspaceSlug, { pk: `ORG#${orgId}`, sk: `WSSLUG#${idOrSlug}` });
    return slug ? this.getById(orgId, slug.workspace_id) : undefined;
  }
}

type TransactItems = NonNullable<TransactWriteCommandInput['TransactItems']>;

export class ApiKeyRepository {
  readonly #t: TableClient;
  /** Keys by user, by pinned config and by when the lifecycle is due (store/api-key-index.ts). */
  readonly #index: ApiKeyIndex;
  constructor(t: TableClient) {
    this.#t = t;
    this.#index = new ApiKeyIndex(t.doc, t.tableName);
  }

  /**
   * A new key's record and hash copy for a larger transaction (each must not exist yet). Its index
   * entries are not among them (a transaction holds 100 items): write them first with `indexAhead`.
   */
  createItems(key: ApiKeyRecord): TransactItems {
    return [this.#t.putIfAbsent(ApiKey.toItem(key)), this.#t.putIfAbsent(ApiKeyByHash.toItem(key))];
  }

  /**
   * The index entries of keys about to be created by a transaction of `createItems`, written before
   * it: should it fail, they are extra entries, which readers drop; a missing one nobody would see.
   */
  indexAhead(keys: readonly ApiKeyRecord[]): Promise<void> {
    return this.#index.putEntries(keys);
  }

  /** The record and its copies under the current hash and, during a transition, the previous one. */
  #puts(key: ApiKeyRecord, condition?: string) {
    const put = (item: Item) => ({ Put: { TableName: this.#t.tableName, Item: item, ...(condition ? { ConditionExpression: condition } : {}) } });
    const items: TransactItems = [put(ApiKey.toItem(key)), put(ApiKeyByHash.toItem(key))];
    // DynamoDB's TTL may already have removed it: no condition.
    if (key.previous_key_hash) items.push({ Put: { TableName: this.#t.tableName, Item: ApiKeyPreviousHash.toItem(key) } });
    return items;
  }

  /** Stores the record, its hash copy and its index entries in one transaction; fails if the key exists. */
  async create(key: ApiKeyRecord): Promise<void> {
    try {
      await this.#t.transact([...this.createItems(key), ...indexWrites(this.#t.tableName, undefined, key)]);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError('An API key with this id or value already exists');
      throw err;
    }
  }

  getById(orgId: string, id: string): Promise<ApiKeyRecord | undefined> {
    return this.#t.get(ApiKey, { pk: `ORG#${orgId}`, sk: `APIKEY#${id}` }, true);
  }

  /** Consistent: a key deleted a moment ago must not be read back into a cache. */
  getByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    return this.#t.get(ApiKeyByHash, { pk: `KEYHASH#${hash}`, sk: 'KEYHASH' }, true);
  }

  /**
   * One page of keys, read with a Query of `limit` items (never the whole list): the organisation's
   * in id order, a workspace's oldest first. `after` is the last key of the previous page.
   */
  async page(
    orgId: string,
    workspaceId: string | undefined,
    limit: number,
    after?: { id: string; created_at: string },
  ): Promise<{ items: ApiKeyRecord[]; last?: ApiKeyRecord }> {
    const base = { pk: `ORG#${orgId}`, ...(after ? { sk: `APIKEY#${after.id}` } : {}) };
    const input = workspaceId
      ? {
          IndexName: 'gsi1',
          KeyConditionExpression: 'gsi1pk = :p',
          ExpressionAttributeValues: { ':p': `WS#${workspaceId}#APIKEYS` },
          ...(after ? { ExclusiveStartKey: { ...base, gsi1pk: `WS#${workspaceId}#APIKEYS`, gsi1sk: `${after.created_at}#${after.id}` } } : {}),
        }
      : {
          ...prefixRange(`ORG#${orgId}`, 'APIKEY#'),
          ConsistentRead: true,
          ...(after ? { ExclusiveStartKey: base } : {}),
        };
    const out = await this.#t.doc.send(new QueryCommand({ ...input, TableName: this.#t.tableName, Limit: limit }));
    const items = (out.Items ?? []).map((i) => ApiKey.fromItem(i as Item));
    return { items, ...(out.LastEvaluatedKey ? { last: items.at(-1) } : {}) };
  }

  /** Keys of the organisation, oldest first; optionally only one workspace's. */
  list(orgId: string, workspaceId?: string): Promise<ApiKeyRecord[]> {
    if (workspaceId) {
      return this.#t.queryAll(ApiKey, {
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ExpressionAttributeValues: { ':p': `WS#${workspaceId}#APIKEYS` },
      });
    }
    return this.#t
      .queryAll(ApiKey, {
        ...prefixRange(`ORG#${orgId}`, 'APIKEY#'),
        ConsistentRead: true,
      })
      .then((keys) => keys.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id)));
  }

  /**
   * Saves a changed key: the record, its hash copies and its index entries together, only if the
   * key still exists (and, with `ifUnchangedSince`, nobody saved it since that `last_updated_at`).
   * `previous` is the record read before the change (its index entries that `key` lacks go).
   * `dropHash` removes the copy under a previous hash whose transition ended.
   */
  async update(key: ApiKeyRecord, opts: { previous: ApiKeyRecord; ifUnchangedSince?: string; dropHash?: string }): Promise<void> {
    const items: TransactItems = [...this.#puts(key, 'attribute_exists(pk)'), ...indexWrites(this.#t.tableName, opts.previous, key)];
    if (opts.ifUnchangedSince !== undefined) {
      items[0] = {
        Put: {
          TableName: this.#t.tableName,
          Item: ApiKey.toItem(key),
          ConditionExpression: 'attribute_exists(pk) AND last_updated_at = :u',
          ExpressionAttributeValues: { ':u': opts.ifUnchangedSince },
        },
      };
    }
    if (opts.dropHash) items.push({ Delete: { TableName: this.#t.tableName, Key: { pk: `KEYHASH#${opts.dropHash}`, sk: 'KEYHASH' } } });
    try {
      await this.#t.transact(items);
    } catch (err) {
      if (isCancelled(err)) throw new NotFoundError(`API key ${key.id} not found or changed meanwhile`);
      throw err;
    }
  }

  /**
   * A rotation: `next` carries the new hash and, as its previous hash, the one `current` had. The
   * old hash's copy is rewritten (it now describes a previous key), the new hash must be unused, and
   * a still older previous hash is dropped.
   */
  async rotate(current: ApiKeyRecord, next: ApiKeyRecord): Promise<void> {
    const t = this.#t.tableName;
    const items: TransactItems = [
      {
        Put: {
          TableName: t,
          Item: ApiKey.toItem(next),
          ConditionExpression: 'attribute_exists(pk) AND key_hash = :h',
          ExpressionAttributeValues: { ':h': current.key_hash },
        },
      },
      this.#t.putIfAbsent(ApiKeyByHash.toItem(next)),
      { Put: { TableName: t, Item: ApiKeyPreviousHash.toItem(next) } },
      ...indexWrites(t, current, next),
    ];
    if (current.previous_key_hash && current.previous_key_hash !== next.previous_key_hash) {
      items.push({ Delete: { TableName: t, Key: { pk: `KEYHASH#${current.previous_key_hash}`, sk: 'KEYHASH' } } });
    }
    try {
      await this.#t.transact(items);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError(`API key ${current.id} changed meanwhile; try again`);
      throw err;
    }
  }

  /** Deletes the record, its hash copies and its index entries together. */
  async delete(key: ApiKeyRecord): Promise<void> {
    const items: TransactItems = [
      { Delete: { TableName: this.#t.tableName, Key: ApiKey.key(key) } },
      { Delete: { TableName: this.#t.tableName, Key: ApiKeyByHash.key(key) } },
      ...indexWrites(this.#t.tableName, key, undefined),
    ];
    if (key.previous_key_hash) items.push({ Delete: { TableName: this.#t.tableName, Key: ApiKeyPreviousHash.key(key) } });
    await this.#t.transact(items);
  }

  /** The keys of a user: from the index, or (before the organisation's backfill is done) the full list. */
  async listByUser(orgId: string, userId: string): Promise<ApiKeyRecord[]> {
    if (await this.#index.ready(orgId)) return this.#index.keysBy(orgId, 'USER', [userId]);
    return (await this.list(orgId)).filter((k) => k.user_id === userId);
  }

  /** The keys whose `defaults.config_id` is one of `refs` (a config's id and slug), as listByUser. */
  async listByConfig(orgId: string, refs: readonly string[]): Promise<ApiKeyRecord[]> {
    if (await this.#index.ready(orgId)) return this.#index.keysBy(orgId, 'CONFIG', refs);
    return (await this.list(orgId)).filter((k) => k.defaults?.config_id !== undefined && refs.includes(k.defaults.config_id));
  }

  /**
   * The keys the lifecycle has something to do for at `nowMs`, a page at a time. Only keys with
   * index entries: until `indexReady`, the lifecycle also looks at what `backfillIndex` reads.
   */
  dueKeys(orgId: string, nowMs: number): AsyncGenerator<ApiKeyRecord[]> {
    return this.#index.dueKeys(orgId, nowMs);
  }

  indexReady(orgId: string): Promise<boolean> {
    return this.#index.ready(orgId);
  }

  /** Gives keys written before the index their entries (store/api-key-index.ts, `backfill`). */
  backfillIndex(orgId: string, opts: Parameters<ApiKeyIndex['backfill']>[1]): Promise<boolean> {
    return this.#index.backfill(orgId, opts);
  }

  /** Whether the workspace holds a key, and how many up to `cap` (+1 when there are more). */
  countInWorkspace(workspaceId: string, cap: number): Promise<number> {
    return this.#t.countOnIndex(`WS#${workspaceId}#APIKEYS`, cap);
  }
}

export class BootstrapRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  get(): Promise<BootstrapRecord | undefined> {
    return this.#t.get(Bootstrap, { pk: 'META', sk: 'BOOTSTRAP' }, true);
  }

  /** First start: organisation, default workspace and owner key in one transaction. */
  async create(boot: BootstrapRecord, org: OrganisationRecord, ws: WorkspaceRecord, ownerKey: ApiKeyRecord): Promise<boolean> {
    try {
      await this.#t.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            this.#t.putIfAbsent(Bootstrap.toItem(boot)),
            this.#t.putIfAbsent(Organisation.toItem(org)),
            this.#t.putIfAbsent(Workspace.toItem(ws)),
            this.#t.putIfAbsent(WorkspaceSlug.toItem({ organisation_id: org.id, slug: ws.slug, workspace_id: ws.id })),
            this.#t.putIfAbsent(ApiKey.toItem(ownerKey)),
            this.#t.putIfAbsent(ApiKeyByHash.toItem(ownerKey)),
            ...indexWrites(this.#t.tableName, undefined, ownerKey),
            // A new organisation's keys all have their index entries: nothing to backfill.
            { Put: { TableName: this.#t.tableName, Item: ApiKeyIndex.doneMarker(org.id, boot.created_at) } },
          ],
        }),
      );
      return true;
    } catch (err) {
      if (isCancelled(err)) return false;
      throw err;
    }
  }

  /** Health probe: a tiny write that proves the table accepts writes. */
  async probeWrite(nowMs: number): Promise<void> {
    await this.#t.doc.send(
      new PutCommand({
        TableName: this.#t.tableName,
        Item: { pk: 'META', sk: 'HEALTH', at: nowMs, ttl: Math.floor(nowMs / 1000) + 3600 },
      }),
    );
  }
}

export interface Repositories {
  table: TableClient;
  organisations: OrganisationRepository;
  workspaces: WorkspaceRepository;
  apiKeys: ApiKeyRepository;
  bootstrap: BootstrapRepository;
}

export function createRepositories(doc: DynamoDBDocumentClient, tableName: string): Repositories {
  const table = new TableClient(doc, tableName);
  return {
    table,
    organisations: new OrganisationRepository(table),
    workspaces: new WorkspaceRepository(table),
    apiKeys: new ApiKeyRepository(table),
    bootstrap: new BootstrapRepository(table),
  };
}
