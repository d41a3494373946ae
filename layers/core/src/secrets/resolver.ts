/**
 * Secret values at request time. A reference (read from the table, its credentials decrypted) is
 * cached for the key cache TTL; a fetched value is cached per instance by reference, reference
 * version and secret key, with the manager's version of what was read, for the secret cache TTL
 * (GW_SECRET_CACHE_TTL_SECONDS, 60 s). `fresh` skips the cache (a provider refused the cached value:
 * rotation). Failures fail closed with a 502 naming the reference and the manager's status, never
 * the value; only when the manager is unreachable or throttling may a value up to 15 minutes old
 * be served instead.
 */
import { ForbiddenError, UpstreamError } from '../http/errors.ts';
import type { Cipher } from '../ports/cipher.ts';
import type { Clock } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import type { TableClient } from '../store/repositories.ts';
import { readSecretReference, secretReferenceContext, type SecretReferenceRecord } from '../store/secret-references.ts';
import { pickField, SecretManagerError, type SecretManagers, type SecretMapping, type SecretSpec } from '../ports/secret-managers.ts';

export type { SecretMapping } from '../ports/secret-managers.ts';

/** The longest a value may be served after its TTL, and only while the manager is unreachable or throttling. */
export const MAX_STALE_MS = 15 * 60_000;

interface LoadedReference {
  record: SecretReferenceRecord;
  spec: SecretSpec;
}

interface CachedValue {
  value: string;
  version: string;
  fetchedAt: number;
}

export interface SecretResolverOptions {
  table: TableClient;
  cipher: Cipher;
  clock: Clock;
  logger: Logger;
  managers: SecretManagers;
  /** How long a reference's record is reused (the key cache TTL). */
  referenceTtlMs: number;
  /** How long a fetched value is used without asking the manager again. */
  valueTtlMs: number;
}

export interface ResolveInput {
  organisationId: string;
  workspaceId: string;
  mapping: SecretMapping;
  /** Ask the manager even when a cached value is fresh. */
  fresh?: boolean;
  signal?: AbortSignal | undefined;
}

export class SecretResolver {
  readonly #o: SecretResolverOptions;
  readonly #refs = new Map<string, { at: number; value: Promise<LoadedReference | undefined> }>();
  readonly #values = new Map<string, CachedValue>();
  readonly #inFlight = new Map<string, Promise<CachedValue>>();
  constructor(o: SecretResolverOptions) {
    this.#o = o;
  }

  /**
   * Forgets the references read (after this process changed one). Values stay: they are keyed by
   * the reference's version, so a changed reference never uses the old ones, and the others keep
   * their stale bridge.
   */
  invalidate(): void {
    this.#refs.clear();
  }

  async resolve(input: ResolveInput): Promise<string> {
    const { organisationId, workspaceId, mapping } = input;
    const loaded = await this.#reference(organisationId, mapping.secret_reference_id);
    if (!loaded) throw new UpstreamError(502, `The secret reference ${mapping.secret_reference_id} of ${mapping.target_field} no longer exists`);
    const ref = loaded.record;
    if (!ref.allow_all_workspaces && !ref.allowed_workspaces.includes(workspaceId)) {
      throw new ForbiddenError(`The secret reference ${ref.slug} (${mapping.target_field}) is not available to this workspace`);
    }
    const secretKey = mapping.secret_key ?? ref.secret_key;
    const key = `${ref.id}#${ref.version}#${secretKey ?? ''}`;
    const now = this.#o.clock.now();
    const cached = this.#values.get(key);
    if (cached && !input.fresh && now - cached.fetchedAt < this.#o.valueTtlMs) return cached.value;
    try {
      return (await this.#fetch(key, loaded, secretKey, input.signal)).value;
    } catch (err) {
      if (!(err instanceof SecretManagerError)) throw err;
      const mayServeStale = (err.kind === 'unavailable' || err.kind === 'throttled') && !input.fresh;
      if (mayServeStale && cached && now - cached.fetchedAt < MAX_STALE_MS) {
        this.#o.logger.warn('secret manager unavailable: serving the cached value', {
          secret_reference: ref.slug,
          manager_type: ref.manager_type,
          manager_status: err.status ?? err.kind,
          age_ms: now - cached.fetchedAt,
        });
        return cached.value;
      }
      this.#values.delete(key);
      throw new UpstreamError(502, `The secret reference ${ref.slug} (${ref.manager_type}) could not be resolved: ${err.message}`, { cause: err });
    }
  }

  /** One fetch per key at a time: a burst of requests after the TTL asks the manager once. */
  #fetch(key: string, loaded: LoadedReference, secretKey: string | null | undefined, signal?: AbortSignal): Promise<CachedValue> {
    const running = this.#inFlight.get(key);
    if (running) return running;
    const work = (async () => {
      const fetched = await this.#o.managers[loaded.spec.manager_type].fetch(loaded.spec, signal);
      const entry = { value: pickField(fetched.value, secretKey), version: fetched.version, fetchedAt: this.#o.clock.now() };
      if (this.#values.size > 5_000) this.#values.clear();
      this.#values.set(key, entry);
      return entry;
    })();
    this.#inFlight.set(key, work);
    const done = () => this.#inFlight.delete(key);
    work.then(done, done);
    return work;
  }

  #reference(org: string, id: string): Promise<LoadedReference | undefined> {
    const now = this.#o.clock.now();
    const cacheKey = `${org}/${id}`;
    const hit = this.#refs.get(cacheKey);
    if (hit && now - hit.at < this.#o.referenceTtlMs) return hit.value;
    const value = this.#load(org, id);
    if (this.#refs.size > 5_000) this.#refs.clear();
    this.#refs.set(cacheKey, { at: now, value });
    value.catch(() => this.#refs.delete(cacheKey));
    return value;
  }

  async #load(org: string, id: string): Promise<LoadedReference | undefined> {
    const record = await readSecretReference(this.#o.table, org, id);
    if (!record) return undefined;
    const secret =
      record.auth_secret === null
        ? {}
        : (JSON.parse(await this.#o.cipher.decrypt(record.auth_secret, secretReferenceContext(org, record.id))) as Record<string, string>);
    return { record, spec: { manager_type: record.manager_type, auth_config: { ...record.auth_plain, ...secret }, secret_path: record.secret_path } };
  }
}
