/**
 * Saved guardrails: versioned, named by id or slug (`guard_…`), of a workspace or of the whole
 * organisation (`workspace_id` null). Layout: the guardrail under its organisation (ORG#,
 * GUARDRAIL#id), a slug claim (ORG#, GUARDRAILSLUG#slug), and its versions under it
 * (GUARDRAIL#id, VER#000001 ...). Every change is one transaction, so it carries its audit entry.
 */
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { ConflictError } from '../http/errors.ts';
import { Entity } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { prefixRange } from './prefix-range.ts';

/** One check of a hook or a saved guardrail. */
export interface CheckRef {
  id: string;
  parameters: Record<string, unknown>;
  is_enabled?: boolean;
}

/** The actions of a saved guardrail (one stored shape; both input shapes are accepted). */
export interface GuardrailActions {
  deny: boolean;
  async: boolean;
  on_success: { feedback?: unknown } | null;
  on_fail: { feedback?: unknown } | null;
  /** The reference's `message` (shown with a denial), when the guardrail was given one. */
  message?: string;
}

export interface GuardrailRecord {
  id: string;
  slug: string;
  name: string;
  organisation_id: string;
  /** Null for an organisation-level guardrail (usable from every workspace). */
  workspace_id: string | null;
  status: 'active' | 'archived';
  checks: CheckRef[];
  actions: GuardrailActions;
  version: number;
  version_id: string;
  created_at: string;
  last_updated_at: string;
  owner_id: string | null;
  updated_by: string | null;
}

export interface GuardrailVersionRecord {
  id: string;
  guardrail_id: string;
  version: number;
  name: string;
  checks: CheckRef[];
  actions: GuardrailActions;
  created_at: string;
  created_by: string | null;
}

export const Guardrail = new Entity<GuardrailRecord>({
  name: 'Guardrail',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `GUARDRAIL#${r.id}` }),
});

export const GuardrailSlug = new Entity<{ organisation_id: string; slug: string; guardrail_id: string }>({
  name: 'GuardrailSlug',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `GUARDRAILSLUG#${r.slug}` }),
});

export const GuardrailVersion = new Entity<GuardrailVersionRecord>({
  name: 'GuardrailVersion',
  key: (r) => ({ pk: `GUARDRAIL#${r.guardrail_id}`, sk: `VER#${String(r.version).padStart(6, '0')}` }),
});

const isCancelled = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'TransactionCanceledException' || err.name === 'ConditionalCheckFailedException');

export const versionOf = (r: GuardrailRecord, createdBy: string | null): GuardrailVersionRecord => ({
  id: r.version_id,
  guardrail_id: r.id,
  version: r.version,
  name: r.name,
  checks: r.checks,
  actions: r.actions,
  created_at: r.last_updated_at,
  created_by: createdBy,
});

export class GuardrailRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  /** The guardrail, its slug claim and its first version; a taken slug is a conflict. */
  async create(rec: GuardrailRecord): Promise<void> {
    try {
      await this.#t.transact([
        this.#t.putIfAbsent(Guardrail.toItem(rec)),
        this.#t.putIfAbsent(GuardrailSlug.toItem({ organisation_id: rec.organisation_id, slug: rec.slug, guardrail_id: rec.id })),
        this.#t.putIfAbsent(GuardrailVersion.toItem(versionOf(rec, rec.owner_id))),
      ]);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError(`A guardrail with slug "${rec.slug}" already exists`);
      throw err;
    }
  }

  /** A new version, conditional on the current one so two concurrent updates cannot both claim it. */
  async update(rec: GuardrailRecord, expectedVersion: number): Promise<void> {
    try {
      await this.#t.transact([
        {
          Put: {
            TableName: this.#t.tableName,
            Item: Guardrail.toItem(rec),
            ConditionExpression: '#v = :v',
            ExpressionAttributeNames: { '#v': 'version' },
            ExpressionAttributeValues: { ':v': expectedVersion },
          },
        },
        this.#t.putIfAbsent(GuardrailVersion.toItem(versionOf(rec, rec.updated_by))),
      ]);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError('The guardrail was changed by another request; read it again and retry');
      throw err;
    }
  }

  async resolve(orgId: string, idOrSlug: string): Promise<GuardrailRecord | undefined> {
    const claim = await this.#t.get(GuardrailSlug, { pk: `ORG#${orgId}`, sk: `GUARDRAILSLUG#${idOrSlug}` }, true);
    return this.#t.get(Guardrail, { pk: `ORG#${orgId}`, sk: `GUARDRAIL#${claim ? claim.guardrail_id : idOrSlug}` }, true);
  }

  /** Every guardrail of the organisation, oldest first. */
  async list(orgId: string): Promise<GuardrailRecord[]> {
    const all = await this.#t.queryAll(Guardrail, {
      ...prefixRange(`ORG#${orgId}`, 'GUARDRAIL#'),
      ConsistentRead: true,
    });
    return all.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  versions(guardrailId: string): Promise<GuardrailVersionRecord[]> {
    return this.#t.queryAll(GuardrailVersion, {
      KeyConditionExpression: 'pk = :p',
      ExpressionAttributeValues: { ':p': `GUARDRAIL#${guardrailId}` },
      ConsistentRead: true,
    });
  }

  /** Removes the guardrail and its slug claim together, then its versions (history). */
  async delete(rec: GuardrailRecord): Promise<void> {
    const versions = await this.versions(rec.id);
    const slug = GuardrailSlug.key({ organisation_id: rec.organisation_id, slug: rec.slug, guardrail_id: rec.id });
    const head = [Guardrail.key(rec), slug].map((Key) => ({ Delete: { TableName: this.#t.tableName, Key } }));
    // A transaction holds 100 items with the audit entry: versions beyond that go in later ones.
    const rest = versions.map((v) => ({ Delete: { TableName: this.#t.tableName, Key: GuardrailVersion.key(v) } }));
    await this.#t.transact([...head, ...rest.slice(0, 90)]);
    for (let i = 90; i < rest.length; i += 90) await this.#t.doc.send(new TransactWriteCommand({ TransactItems: rest.slice(i, i + 90) }));
  }
}
