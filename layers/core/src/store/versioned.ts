/**
 * Resources with immutable versions behind a head record (prompts, prompt partials). The head lives
 * under its organisation with a slug claim beside it; versions live under the head's own partition
 * (`<KIND>#id`, `VER#000001` ...). Every write of the head is conditional on its `revision`, so two
 * concurrent changes cannot both win, and each change is one transaction (carrying its audit entry).
 */
import { ConflictError } from '../http/errors.ts';
import { Entity, type ItemKey } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { prefixRange } from './prefix-range.ts';

export interface HeadBase {
  id: string;
  slug: string;
  organisation_id: string;
  workspace_id: string;
  /** The highest version number made so far. */
  latest_version: number;
  /** The published version: what a reference without a suffix names. */
  default_version: number;
  /** Bumped by every write of the head; writes are conditional on it. */
  revision: number;
}

export interface VersionBase {
  id: string;
  version: number;
}

export interface SlugClaim {
  organisation_id: string;
  slug: string;
  target_id: string;
}

/** A transaction holds 100 items; one is the audit entry and two are the head and its slug claim. */
export const MAX_VERSIONS_DELETED_AT_ONCE = 97;

/** A transaction or put refused by one of its conditions. */
export const isCancelled = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'TransactionCanceledException' || err.name === 'ConditionalCheckFailedException');

const padded = (n: number): string => String(n).padStart(6, '0');

/** The three entities of one versioned kind, declared from its key prefix (`PROMPT`, `PARTIAL`). */
export function versionedEntities<H extends HeadBase, V extends VersionBase>(kind: string, parentOf: (v: V) => string) {
  return {
    head: new Entity<H>({ name: `${kind}Head`, key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `${kind}#${r.id}` }) }),
    slug: new Entity<SlugClaim>({ name: `${kind}Slug`, key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `${kind}SLUG#${r.slug}` }) }),
    version: new Entity<V>({ name: `${kind}Version`, key: (v) => ({ pk: `${kind}#${parentOf(v)}`, sk: `VER#${padded(v.version)}` }) }),
    kind,
  };
}

export type VersionedEntities<H extends HeadBase, V extends VersionBase> = ReturnType<typeof versionedEntities<H, V>>;

export class VersionedRepository<H extends HeadBase, V extends VersionBase> {
  readonly #t: TableClient;
  readonly #e: VersionedEntities<H, V>;
  /** How the kind is named in messages ("prompt", "prompt partial"). */
  readonly #noun: string;
  constructor(t: TableClient, entities: VersionedEntities<H, V>, noun: string) {
    this.#t = t;
    this.#e = entities;
    this.#noun = noun;
  }

  #headPut(head: H, expectedRevision: number) {
    return {
      Put: {
        TableName: this.#t.tableName,
        Item: this.#e.head.toItem(head),
        ConditionExpression: '#r = :r',
        ExpressionAttributeNames: { '#r': 'revision' },
        ExpressionAttributeValues: { ':r': expectedRevision },
      },
    };
  }

  async #write(items: Parameters<TableClient['transact']>[0], conflict: ConflictError): Promise<void> {
    try {
      await this.#t.transact(items);
    } catch (err) {
      if (isCancelled(err)) throw conflict;
      throw err;
    }
  }

  #changed(): ConflictError {
    return new ConflictError(`The ${this.#noun} was changed by another request; read it again and retry`);
  }

  /** The head, its slug claim and its first version; `also` are checks or puts of the same change. */
  create(head: H, first: V, also: Parameters<TableClient['transact']>[0] = []): Promise<void> {
    return this.#write(
      [
        this.#t.putIfAbsent(this.#e.head.toItem(head)),
        this.#t.putIfAbsent(this.#e.slug.toItem({ organisation_id: head.organisation_id, slug: head.slug, target_id: head.id })),
        this.#t.putIfAbsent(this.#e.version.toItem(first)),
        ...also,
      ],
      new ConflictError(`A ${this.#noun} with slug "${head.slug}" already exists, or its collection was removed meanwhile`, { param: 'slug' }),
    );
  }

  /** A new version and the head that counts it, conditional on the head read before. */
  addVersion(head: H, version: V, expectedRevision: number, also: Parameters<TableClient['transact']>[0] = []): Promise<void> {
    return this.#write([this.#headPut(head, expectedRevision), this.#t.putIfAbsent(this.#e.version.toItem(version)), ...also], this.#changed());
  }

  /** A change of the head only (name, default version, label pointers). */
  saveHead(head: H, expectedRevision: number, also: Parameters<TableClient['transact']>[0] = []): Promise<void> {
    return this.#write([this.#headPut(head, expectedRevision), ...also], this.#changed());
  }

  async resolve(orgId: string, idOrSlug: string): Promise<H | undefined> {
    const claim = await this.#t.get(this.#e.slug, { pk: `ORG#${orgId}`, sk: `${this.#e.kind}SLUG#${idOrSlug}` }, true);
    return this.#t.get(this.#e.head, { pk: `ORG#${orgId}`, sk: `${this.#e.kind}#${claim ? claim.target_id : idOrSlug}` }, true);
  }

  /** Every head of the organisation, oldest first. */
  async list(orgId: string): Promise<H[]> {
    return this.#t.queryAll(this.#e.head, {
      ...prefixRange(`ORG#${orgId}`, `${this.#e.kind}#`),
      ConsistentRead: true,
    });
  }

  /** Every version, oldest first. */
  versions(id: string): Promise<V[]> {
    return this.#t.queryAll(this.#e.version, {
      ...prefixRange(`${this.#e.kind}#${id}`, 'VER#'),
      ConsistentRead: true,
    });
  }

  /** One version by number; versions never change, so an eventually consistent read is enough once it exists. */
  version(id: string, n: number, consistent = false): Promise<V | undefined> {
    return this.#t.get(this.#e.version, { pk: `${this.#e.kind}#${id}`, sk: `VER#${padded(n)}` }, consistent);
  }

  /**
   * Removes the head, its slug claim and every version in one transaction, conditional on the head
   * read before: nothing is left half-deleted. More versions than one transaction holds is a 409.
   */
  async delete(head: H): Promise<void> {
    const versions = await this.versions(head.id);
    if (versions.length > MAX_VERSIONS_DELETED_AT_ONCE) {
      throw new ConflictError(
        `The ${this.#noun} has ${versions.length} versions; a delete removes the ${this.#noun} with all its versions at once, at most ${MAX_VERSIONS_DELETED_AT_ONCE}`,
      );
    }
    const del = (Key: ItemKey) => ({ Delete: { TableName: this.#t.tableName, Key } });
    const headDelete = {
      Delete: {
        TableName: this.#t.tableName,
        Key: this.#e.head.key(head),
        ConditionExpression: '#r = :r',
        ExpressionAttributeNames: { '#r': 'revision' },
        ExpressionAttributeValues: { ':r': head.revision },
      },
    };
    const slug = this.#e.slug.key({ organisation_id: head.organisation_id, slug: head.slug, target_id: head.id });
    await this.#write([headDelete, del(slug), ...versions.map((v) => del(this.#e.version.key(v)))], this.#changed());
  }
}
