/**
 * Secret references: where a credential lives in an external secret manager and how to reach it.
 * Layout, under the organisation (`ORG#<org>`): `SECRETREF#<id>` (the reference; the credential
 * fields of its auth_config only as one ciphertext, `auth_secret`) and `SECRETREFSLUG#<slug>` (the
 * slug claim). Every change is one transaction, so it carries its audit entry. The secret's value
 * is never stored: it is fetched at request time.
 */
import type { ManagerType } from '../ports/secret-managers.ts';
import { ConflictError } from '../http/errors.ts';
import { Entity } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { prefixRange } from './prefix-range.ts';

export interface SecretReferenceRecord {
  id: string;
  organisation_id: string;
  slug: string;
  name: string;
  description: string | null;
  manager_type: ManagerType;
  /** auth_config without its credential fields (vault_addr, aws_region, azure_vault_url ...). */
  auth_plain: Record<string, string>;
  /** The credential fields, encrypted with the cipher bound to `{organisation_id, secret_reference_id}`; null without any. */
  auth_secret: string | null;
  /** Masked forms of the credential fields, for answers. */
  masked_auth: Record<string, string>;
  secret_path: string;
  secret_key: string | null;
  allow_all_workspaces: boolean;
  /** Workspace ids; empty when every workspace may use the reference. */
  allowed_workspaces: string[];
  tags: Record<string, string> | null;
  status: 'ACTIVE';
  /** Bumped by every change: cached values of an older version are not used. */
  version: number;
  /**
   * Bumped by every integration write that maps the reference, in that write's transaction, so a
   * delete conditioned on the value it read cannot race a new mapping (see `mappingTouches`).
   */
  mapping_epoch?: number;
  created_by: string | null;
  created_at: string;
  last_updated_at: string;
}

export const SecretReference = new Entity<SecretReferenceRecord>({
  name: 'SecretReference',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `SECRETREF#${r.id}` }),
});

export const SecretReferenceSlug = new Entity<{ organisation_id: string; slug: string; secret_reference_id: string }>({
  name: 'SecretReferenceSlug',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `SECRETREFSLUG#${r.slug}` }),
});

export const secretReferenceContext = (organisationId: string, id: string) => ({ organisation_id: organisationId, secret_reference_id: id });

type TransactItem = Parameters<TableClient['transact']>[0][number];

/**
 * Transaction items for an integration write that maps these references: each must still exist
 * (a concurrent delete makes the write fail) and has its mapping epoch bumped (a concurrent delete
 * that read the older epoch fails instead). Either way no mapping points at a deleted reference.
 */
export function mappingTouches(t: TableClient, organisationId: string, referenceIds: Iterable<string>): TransactItem[] {
  return [...new Set(referenceIds)].map((id) => ({
    Update: {
      TableName: t.tableName,
      Key: SecretReference.key({ organisation_id: organisationId, id } as SecretReferenceRecord),
      UpdateExpression: 'SET mapping_epoch = if_not_exists(mapping_epoch, :zero) + :one',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':zero': 0, ':one': 1 },
    },
  }));
}

const isCancelled = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'TransactionCanceledException' || err.name === 'ConditionalCheckFailedException');

/** By id or slug, consistently (the gateway reads it too, without the write path). */
export async function readSecretReference(t: TableClient, orgId: string, idOrSlug: string): Promise<SecretReferenceRecord | undefined> {
  const claim = await t.get(SecretReferenceSlug, { pk: `ORG#${orgId}`, sk: `SECRETREFSLUG#${idOrSlug}` }, true);
  return t.get(SecretReference, { pk: `ORG#${orgId}`, sk: `SECRETREF#${claim ? claim.secret_reference_id : idOrSlug}` }, true);
}

export class SecretReferenceRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  async create(rec: SecretReferenceRecord): Promise<void> {
    try {
      await this.#t.transact([
        this.#t.putIfAbsent(SecretReference.toItem(rec)),
        this.#t.putIfAbsent(SecretReferenceSlug.toItem({ organisation_id: rec.organisation_id, slug: rec.slug, secret_reference_id: rec.id })),
      ]);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError(`A secret reference with slug "${rec.slug}" already exists`, { param: 'slug' });
      throw err;
    }
  }

  /** Conditional on the version read, so two concurrent updates cannot both apply. */
  async update(rec: SecretReferenceRecord, expectedVersion: number): Promise<void> {
    try {
      await this.#t.transact([
        {
          Put: {
            TableName: this.#t.tableName,
            Item: SecretReference.toItem(rec),
            ConditionExpression: '#v = :v',
            ExpressionAttributeNames: { '#v': 'version' },
            ExpressionAttributeValues: { ':v': expectedVersion },
          },
        },
      ]);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError('The secret reference was changed by another request; read it again and retry');
      throw err;
    }
  }

  resolve(orgId: string, idOrSlug: string): Promise<SecretReferenceRecord | undefined> {
    return readSecretReference(this.#t, orgId, idOrSlug);
  }

  async list(orgId: string): Promise<SecretReferenceRecord[]> {
    const all = await this.#t.queryAll(SecretReference, {
      ...prefixRange(`ORG#${orgId}`, 'SECRETREF#'),
      ConsistentRead: true,
    });
    return all.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  /**
   * Deletes the reference as it was read: a change or a new mapping since then (the version or the
   * mapping epoch moved) cancels the delete with a conflict, so the caller's check that no
   * integration maps it still holds when the delete applies.
   */
  async delete(rec: SecretReferenceRecord): Promise<void> {
    const slug = SecretReferenceSlug.key({ organisation_id: rec.organisation_id, slug: rec.slug, secret_reference_id: rec.id });
    const epoch = rec.mapping_epoch === undefined ? 'attribute_not_exists(mapping_epoch)' : 'mapping_epoch = :e';
    try {
      await this.#t.transact([
        {
          Delete: {
            TableName: this.#t.tableName,
            Key: SecretReference.key(rec),
            ConditionExpression: `#v = :v AND ${epoch}`,
            ExpressionAttributeNames: { '#v': 'version' },
            ExpressionAttributeValues: { ':v': rec.version, ...(rec.mapping_epoch === undefined ? {} : { ':e': rec.mapping_epoch }) },
          },
        },
        { Delete: { TableName: this.#t.tableName, Key: slug } },
      ]);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError('The secret reference was changed or mapped by another request; read it again and retry');
      throw err;
    }
  }
}
