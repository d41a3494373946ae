/**
 * Integrations (an organisation's provider credentials) and the workspace providers that use them.
 * Layout, all under the organisation (`ORG#<org>`):
 * - `INTEGRATION#<id>`: the integration; its credential only as ciphertext (`secret`);
 * - `INTEGRATIONSLUG#<slug>`: the slug claim;
 * - `INTEGRATIONUSE#<id>`: how many providers use it (an atomic counter, so that deleting an
 *   integration in use is refused exactly, whatever runs concurrently);
 * - `PROVIDER#<workspace>#<slug>`: a provider, unique per workspace by its key; the generic index
 *   lists the providers of an integration (`INTEGRATION#<id>#PROVIDERS`).
 */
import { QueryCommand, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { ConflictError, NotFoundError } from '../http/errors.ts';
import type { KeyUsageLimits } from './entities.ts';
import type { SecretMapping } from '../ports/secret-managers.ts';
import { mappingTouches } from './secret-references.ts';
import { Entity } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { prefixRange } from './prefix-range.ts';

export type IntegrationStatus = 'active' | 'archived';

export interface IntegrationRecord {
  id: string;
  organisation_id: string;
  slug: string;
  name: string;
  description: string | null;
  /** A provider id of the registry (`openai`, ...). */
  ai_provider_id: string;
  status: IntegrationStatus;
  /**
   * The credential and the secret configuration fields, as one ciphertext bound to
   * `{organisation_id, integration_id}`; null when there are none.
   */
  secret: string | null;
  /** A masked form of the key for display; null without a key. */
  masked_key: string | null;
  /** The configuration without its secret fields (provider options, custom host ...). */
  configurations: Record<string, unknown>;
  /** Masked forms of the secret configuration fields, by field name. */
  masked_configurations: Record<string, string>;
  tags: Record<string, string>;
  /** Workspaces allowed to use the integration; null means every workspace. */
  workspace_ids: string[] | null;
  /** Models allowed through the integration; empty means every model. */
  allowed_models: string[];
  /** Fields resolved at request time from secret references (the values are never stored). */
  secret_mappings?: SecretMapping[];
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

export interface ProviderRecord {
  id: string;
  organisation_id: string;
  workspace_id: string;
  /** Unique within the workspace; used as `@slug`. */
  slug: string;
  name: string;
  integration_id: string;
  note: string | null;
  expires_at: string | null;
  /** The provider's budget, enforced when a target resolves to it (the API key's shape). */
  usage_limits?: KeyUsageLimits | null;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

interface SlugClaim {
  organisation_id: string;
  slug: string;
  integration_id: string;
}

interface UseCounter {
  organisation_id: string;
  integration_id: string;
  providers: number;
}

export const Integration = new Entity<IntegrationRecord>({
  name: 'Integration',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `INTEGRATION#${r.id}` }),
});

export const IntegrationSlug = new Entity<SlugClaim>({
  name: 'IntegrationSlug',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `INTEGRATIONSLUG#${r.slug}` }),
});

export const IntegrationUse = new Entity<UseCounter>({
  name: 'IntegrationUse',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `INTEGRATIONUSE#${r.integration_id}` }),
});

export const Provider = new Entity<ProviderRecord>({
  name: 'Provider',
  key: (r) => providerKey(r.organisation_id, r.workspace_id, r.slug),
  gsi1: (r) => ({ pk: `INTEGRATION#${r.integration_id}#PROVIDERS`, sk: `${r.created_at}#${r.id}` }),
});

export function providerKey(organisationId: string, workspaceId: string, slug: string) {
  return { pk: `ORG#${organisationId}`, sk: `PROVIDER#${workspaceId}#${slug}` };
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** Why each item of a cancelled transaction failed (`None` for those that did not). */
function cancellationCodes(err: unknown): string[] | undefined {
  if (!(err instanceof Error) || err.name !== 'TransactionCanceledException') return undefined;
  const reasons = (err as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons;
  return reasons?.map((r) => r.Code ?? 'None') ?? [];
}

const conditionFailed = (codes: string[], i: number): boolean => codes[i] === 'ConditionalCheckFailed';

/** A secret reference named in `secret_mappings` was deleted while the integration was being saved. */
function mappedReferenceGone(): ConflictError {
  return new ConflictError('A secret reference named in secret_mappings was deleted meanwhile; check the mappings and retry', { param: 'secret_mappings' });
}

function concurrentChange(): ConflictError {
  return new ConflictError('Another request changed the same items at the same time; retry');
}

const byCreation = <R extends { created_at: string; id: string }>(a: R, b: R) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id);

export class IntegrationRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  /**
   * The integration, its slug claim, its use counter and any default providers, together. A taken
   * integration slug or provider slug is a conflict naming it.
   */
  async create(rec: IntegrationRecord, providers: readonly ProviderRecord[] = []): Promise<void> {
    const use: UseCounter = { organisation_id: rec.organisation_id, integration_id: rec.id, providers: providers.length };
    const items: TransactItem[] = [
      this.#t.putIfAbsent(Integration.toItem(rec)),
      this.#t.putIfAbsent(IntegrationSlug.toItem({ organisation_id: rec.organisation_id, slug: rec.slug, integration_id: rec.id })),
      this.#t.putIfAbsent(IntegrationUse.toItem(use)),
      ...providers.map((p) => this.#t.putIfAbsent(Provider.toItem(p))),
      ...this.#touches(rec),
    ];
    try {
      await this.#t.doc.send(new TransactWriteCommand({ TransactItems: items }));
    } catch (err) {
      const codes = cancellationCodes(err);
      if (!codes) throw err;
      if (conditionFailed(codes, 1)) throw new ConflictError(`An integration with slug "${rec.slug}" already exists`, { param: 'slug' });
      if (codes.slice(3 + providers.length).some((c) => c === 'ConditionalCheckFailed')) throw mappedReferenceGone();
      const taken = providers.find((_, i) => conditionFailed(codes, i + 3));
      if (taken) {
        throw new ConflictError(`Workspace ${taken.workspace_id} already has a provider with slug "${taken.slug}"`, { param: 'default_provider_slug' });
      }
      throw concurrentChange();
    }
  }

  /** Saves a changed integration, only if it still exists. */
  async update(rec: IntegrationRecord): Promise<void> {
    try {
      await this.#t.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: this.#t.tableName, Item: Integration.toItem(rec), ConditionExpression: 'attribute_exists(pk)' } },
            ...this.#touches(rec),
          ],
        }),
      );
    } catch (err) {
      const codes = cancellationCodes(err);
      if (codes && conditionFailed(codes, 0)) throw new NotFoundError(`Integration ${rec.slug} not found`);
      if (codes?.slice(1).some((c) => c === 'ConditionalCheckFailed')) throw mappedReferenceGone();
      if (codes) throw concurrentChange();
      throw err;
    }
  }

  /** The mapped secret references, checked and stamped in the same transaction (see `mappingTouches`). */
  #touches(rec: IntegrationRecord): TransactItem[] {
    return mappingTouches(
      this.#t,
      rec.organisation_id,
      (rec.secret_mappings ?? []).map((m) => m.secret_reference_id),
    );
  }

  /** Deletes the integration unless a provider uses it (then a conflict). */
  async delete(rec: IntegrationRecord): Promise<void> {
    const org = rec.organisation_id;
    try {
      await this.#t.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            { Delete: { TableName: this.#t.tableName, Key: Integration.key(rec) } },
            { Delete: { TableName: this.#t.tableName, Key: IntegrationSlug.key({ organisation_id: org, slug: rec.slug, integration_id: rec.id }) } },
            {
              Delete: {
                TableName: this.#t.tableName,
                Key: IntegrationUse.key({ organisation_id: org, integration_id: rec.id, providers: 0 }),
                ConditionExpression: 'attribute_not_exists(pk) OR providers <= :zero',
                ExpressionAttributeValues: { ':zero': 0 },
              },
            },
          ],
        }),
      );
    } catch (err) {
      const codes = cancellationCodes(err);
      if (codes && conditionFailed(codes, 2)) throw new ConflictError(`Integration ${rec.slug} is used by providers; delete them first`);
      if (codes) throw concurrentChange();
      throw err;
    }
  }

  getById(orgId: string, id: string, consistent = true): Promise<IntegrationRecord | undefined> {
    return this.#t.get(Integration, { pk: `ORG#${orgId}`, sk: `INTEGRATION#${id}` }, consistent);
  }

  /** By id or slug. */
  async resolve(orgId: string, idOrSlug: string): Promise<IntegrationRecord | undefined> {
    const claim = await this.#t.get(IntegrationSlug, { pk: `ORG#${orgId}`, sk: `INTEGRATIONSLUG#${idOrSlug}` }, true);
    return this.getById(orgId, claim ? claim.integration_id : idOrSlug);
  }

  /** Every integration of the organisation, oldest first. */
  async list(orgId: string): Promise<IntegrationRecord[]> {
    const all = await this.#t.queryAll(Integration, {
      ...prefixRange(`ORG#${orgId}`, 'INTEGRATION#'),
      ConsistentRead: true,
    });
    return all.sort(byCreation);
  }

  /** How many providers use the integration (exact: the counter, read consistently). */
  async providerCount(orgId: string, integrationId: string): Promise<number> {
    const use = await this.#t.get(IntegrationUse, { pk: `ORG#${orgId}`, sk: `INTEGRATIONUSE#${integrationId}` }, true);
    return use?.providers ?? 0;
  }
}

export class ProviderRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  /**
   * Stores a provider and counts it on its integration, which must still exist. A slug taken in
   * the workspace is a conflict.
   */
  async create(rec: ProviderRecord): Promise<void> {
    const org = rec.organisation_id;
    try {
      await this.#t.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            this.#t.putIfAbsent(Provider.toItem(rec)),
            {
              ConditionCheck: {
                TableName: this.#t.tableName,
                Key: { pk: `ORG#${org}`, sk: `INTEGRATION#${rec.integration_id}` },
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
            this.#count(org, rec.integration_id, 1),
          ],
        }),
      );
    } catch (err) {
      const codes = cancellationCodes(err);
      if (!codes) throw err;
      if (conditionFailed(codes, 0)) throw new ConflictError(`This workspace already has a provider with slug "${rec.slug}"`, { param: 'slug' });
      if (conditionFailed(codes, 1)) throw new NotFoundError(`Integration ${rec.integration_id} not found`, { param: 'integration_id' });
      throw concurrentChange();
    }
  }

  #count(org: string, integrationId: string, delta: number): TransactItem {
    return {
      Update: {
        TableName: this.#t.tableName,
        Key: { pk: `ORG#${org}`, sk: `INTEGRATIONUSE#${integrationId}` },
        UpdateExpression: 'SET organisation_id = :o, integration_id = :i, #t = :t ADD providers :d',
        ExpressionAttributeNames: { '#t': '_type' },
        ExpressionAttributeValues: { ':o': org, ':i': integrationId, ':t': IntegrationUse.decl.name, ':d': delta },
      },
    };
  }

  /** Saves a changed provider, only if it still exists. */
  async update(rec: ProviderRecord): Promise<void> {
    try {
      await this.#t.doc.send(
        new TransactWriteCommand({
          TransactItems: [{ Put: { TableName: this.#t.tableName, Item: Provider.toItem(rec), ConditionExpression: 'attribute_exists(pk)' } }],
        }),
      );
    } catch (err) {
      const codes = cancellationCodes(err);
      if (codes && conditionFailed(codes, 0)) throw new NotFoundError(`Provider ${rec.slug} not found`);
      if (codes) throw concurrentChange();
      throw err;
    }
  }

  /** Deletes the provider and uncounts it; deleting one already gone is a 404. */
  async delete(rec: ProviderRecord): Promise<void> {
    try {
      await this.#t.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            { Delete: { TableName: this.#t.tableName, Key: Provider.key(rec), ConditionExpression: 'attribute_exists(pk)' } },
            this.#count(rec.organisation_id, rec.integration_id, -1),
          ],
        }),
      );
    } catch (err) {
      const codes = cancellationCodes(err);
      if (codes && conditionFailed(codes, 0)) throw new NotFoundError(`Provider ${rec.slug} not found`);
      if (codes) throw concurrentChange();
      throw err;
    }
  }

  /** One GetItem: the gateway's lookup of `@slug` in a workspace. */
  get(orgId: string, workspaceId: string, slug: string, consistent = false): Promise<ProviderRecord | undefined> {
    return this.#t.get(Provider, providerKey(orgId, workspaceId, slug), consistent);
  }

  /** The providers of one workspace, or of the whole organisation; oldest first. */
  async list(orgId: string, workspaceId?: string): Promise<ProviderRecord[]> {
    const all = await this.#t.queryAll(Provider, {
      ...prefixRange(`ORG#${orgId}`, workspaceId ? `PROVIDER#${workspaceId}#` : 'PROVIDER#'),
      ConsistentRead: true,
    });
    return all.sort(byCreation);
  }

  /** Up to `limit` providers using an integration (index read: for messages, not for decisions). */
  async byIntegration(integrationId: string, limit = 20): Promise<ProviderRecord[]> {
    const out = await this.#t.doc.send(
      new QueryCommand({
        TableName: this.#t.tableName,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ExpressionAttributeValues: { ':p': `INTEGRATION#${integrationId}#PROVIDERS` },
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map((i) => Provider.fromItem(i));
  }
}
