/**
 * Virtual keys (legacy; providers replace them): a provider credential kept for one workspace,
 * named by a slug unique in that workspace. Under the organisation, `VK#<workspace>#<slug>`; the
 * credential only as ciphertext.
 */
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ConflictError, NotFoundError } from '../http/errors.ts';
import { Entity } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { prefixRange } from './prefix-range.ts';

export interface VirtualKeyRecord {
  id: string;
  organisation_id: string;
  workspace_id: string;
  slug: string;
  name: string;
  /** A provider id of the registry. */
  provider: string;
  note: string | null;
  /** The key and the secret configuration fields, encrypted with `{organisation_id, virtual_key_id}`. */
  secret: string | null;
  masked_key: string | null;
  configurations: Record<string, unknown>;
  masked_configurations: Record<string, string>;
  expires_at: string | null;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

export const VirtualKey = new Entity<VirtualKeyRecord>({
  name: 'VirtualKey',
  key: (r) => virtualKeyKey(r.organisation_id, r.workspace_id, r.slug),
});

export function virtualKeyKey(organisationId: string, workspaceId: string, slug: string) {
  return { pk: `ORG#${organisationId}`, sk: `VK#${workspaceId}#${slug}` };
}

const conditionFailed = (err: unknown): boolean => err instanceof Error && err.name === 'ConditionalCheckFailedException';

export class VirtualKeyRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  async create(rec: VirtualKeyRecord): Promise<void> {
    try {
      await this.#t.doc.send(new PutCommand({ ...this.#t.putIfAbsent(VirtualKey.toItem(rec)).Put }));
    } catch (err) {
      if (conditionFailed(err)) throw new ConflictError(`This workspace already has a virtual key with slug "${rec.slug}"`, { param: 'slug' });
      throw err;
    }
  }

  async update(rec: VirtualKeyRecord): Promise<void> {
    try {
      await this.#t.doc.send(new PutCommand({ TableName: this.#t.tableName, Item: VirtualKey.toItem(rec), ConditionExpression: 'attribute_exists(pk)' }));
    } catch (err) {
      if (conditionFailed(err)) throw new NotFoundError(`Virtual key ${rec.slug} not found`);
      throw err;
    }
  }

  async delete(rec: VirtualKeyRecord): Promise<void> {
    try {
      await this.#t.doc.send(new DeleteCommand({ TableName: this.#t.tableName, Key: VirtualKey.key(rec), ConditionExpression: 'attribute_exists(pk)' }));
    } catch (err) {
      if (conditionFailed(err)) throw new NotFoundError(`Virtual key ${rec.slug} not found`);
      throw err;
    }
  }

  get(orgId: string, workspaceId: string, slug: string, consistent = false): Promise<VirtualKeyRecord | undefined> {
    return this.#t.get(VirtualKey, virtualKeyKey(orgId, workspaceId, slug), consistent);
  }

  /** The virtual keys of one workspace, or of the whole organisation; oldest first. */
  async list(orgId: string, workspaceId?: string): Promise<VirtualKeyRecord[]> {
    const all = await this.#t.queryAll(VirtualKey, {
      ...prefixRange(`ORG#${orgId}`, workspaceId ? `VK#${workspaceId}#` : 'VK#'),
      ConsistentRead: true,
    });
    return all.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }
}
