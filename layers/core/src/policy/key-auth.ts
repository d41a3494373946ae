/**
 * Authenticates `x-gw-api-key`. A warm key is served from an in-process cache without any
 * DynamoDB call; after `ttlMs` it is still served while a background read refreshes it, so a
 * revoked key stops working within about one TTL. Entries older than `maxStaleMs` are re-read
 * synchronously. `invalidate` applies admin changes made in this process at once.
 */
import { AuthenticationError } from '../http/errors.ts';
import type { Clock } from '../ports/clock.ts';
import type { ApiKeyRecord } from '../store/entities.ts';
import type { ApiKeyRepository } from '../store/repositories.ts';
import { hashApiKey } from './api-key-secret.ts';
import type { Principal } from './principal.ts';

interface Entry {
  record: ApiKeyRecord | undefined;
  principal: Principal | undefined;
  fetchedAt: number;
  refreshing: boolean;
}

export interface KeyAuthOptions {
  ttlMs: number;
  maxStaleMs?: number;
  /** Unknown keys are remembered this long, so a bad key cannot hammer the table. */
  negativeTtlMs?: number;
  maxEntries?: number;
}

export class KeyAuthenticator {
  readonly #repo: ApiKeyRepository;
  readonly #clock: Clock;
  readonly #ttl: number;
  readonly #maxStale: number;
  readonly #negativeTtl: number;
  readonly #maxEntries: number;
  readonly #cache = new Map<string, Entry>();
  /** Bumped by every invalidate: a read that started before it must not be cached. */
  #generation = 0;

  constructor(repo: ApiKeyRepository, clock: Clock, opts: KeyAuthOptions) {
    this.#repo = repo;
    this.#clock = clock;
    this.#ttl = opts.ttlMs;
    this.#maxStale = opts.maxStaleMs ?? Math.max(opts.ttlMs * 6, 60_000);
    this.#negativeTtl = opts.negativeTtlMs ?? Math.min(opts.ttlMs, 2_000);
    this.#maxEntries = opts.maxEntries ?? 10_000;
  }

  /** Resolves the principal of a raw key, or throws AuthenticationError. */
  async authenticate(rawKey: string | null | undefined): Promise<Principal> {
    if (!rawKey) throw new AuthenticationError('Missing API key: send it in the x-gw-api-key header');
    const hash = hashApiKey(rawKey);
    const now = this.#clock.now();
    let entry = this.#cache.get(hash);
    const age = entry ? now - entry.fetchedAt : Infinity;
    const fresh = entry?.record ? age < this.#ttl : age < this.#negativeTtl;
    if (!entry || (!fresh && (age >= this.#maxStale || !entry.record))) {
      entry = await this.#load(hash);
    } else if (!fresh && !entry.refreshing) {
      const stale = entry;
      stale.refreshing = true;
      // A failed or discarded refresh leaves the stale entry in place: let the next request retry.
      this.#load(hash)
        .catch(() => undefined)
        .then(() => {
          stale.refreshing = false;
        });
    }
    return this.#check(entry, now);
  }

  invalidate(hash: string): void {
    this.#generation++;
    this.#cache.delete(hash);
  }

  async #load(hash: string): Promise<Entry> {
    const generation = this.#generation;
    const record = await this.#repo.getByHash(hash);
    const entry: Entry = { record, principal: record && toPrincipal(record), fetchedAt: this.#clock.now(), refreshing: false };
    // An invalidate ran while we read: what we read may predate it, so serve it once, cache nothing.
    if (generation !== this.#generation) return entry;
    if (this.#cache.size >= this.#maxEntries) {
      const oldest = this.#cache.keys().next();
      if (!oldest.done) this.#cache.delete(oldest.value);
    }
    this.#cache.set(hash, entry);
    return entry;
  }

  #check(entry: Entry, now: number): Principal {
    const { record, principal } = entry;
    if (!record || !principal) throw new AuthenticationError('Invalid API key');
    if (record.status !== 'active') throw new AuthenticationError('This API key has expired');
    if (record.expires_at && Date.parse(record.expires_at) <= now) {
      throw new AuthenticationError('This API key has expired');
    }
    return principal;
  }
}

export function toPrincipal(r: ApiKeyRecord): Principal {
  return {
    keyId: r.id,
    organisationId: r.organisation_id,
    workspaceId: r.workspace_id,
    userId: r.user_id,
    keyType: r.type,
    owner: r.owner,
    scopes: new Set(r.scopes),
    defaults: r.defaults ?? null,
  };
}
