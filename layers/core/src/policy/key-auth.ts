/**
 * Authenticates callers: an API key in `x-gw-api-key` (or, on admin routes, a `gw_` key as
 * `Authorization: Bearer`), or a JWT (in `x-gw-jwt`, in `x-gw-api-key` when it has the shape of a
 * JWT, or, on admin routes, as `Authorization: Bearer`; on gateway routes `Authorization` carries
 * the provider's key, unless it is a `gw_` key, which gateway/headers.ts moves to `x-gw-api-key`).
 *
 * A warm key is served from an in-process cache without any DynamoDB call; after `ttlMs` it is
 * still served while a background read refreshes it, so a revoked key stops working within about
 * one TTL. Entries older than `maxStaleMs` are re-read synchronously. `invalidate` applies admin
 * changes made in this process at once. A cold key costs one GetItem, plus, for a workspace key,
 * the workspace's state and, for a user key, the user's membership (its role).
 */
import type { AppConfig } from '../config.ts';
import { AuthenticationError, ForbiddenError, type GantryError } from '../http/errors.ts';
import type { Clock } from '../ports/clock.ts';
import type { ApiKeyDefaults, ApiKeyRecord, WorkspaceRecord } from '../store/entities.ts';
import { Member, memberKey, User, type WorkspaceRole } from '../store/identity.ts';
import type { ApiKeyRepository, Repositories } from '../store/repositories.ts';
import { hashApiKey } from './api-key-secret.ts';
import { JwtVerifier, looksLikeJwt, type JwtIdentity } from './jwt.ts';
import type { Principal, Role } from '../kernel/principal.ts';

/** What the authenticator needs to know beyond the key record: workspaces, memberships, sessions. */
export interface PrincipalDirectory {
  workspace(orgId: string, idOrSlug: string): Promise<WorkspaceRecord | undefined>;
  /** The role of a user in a workspace (organisation owners and admins act as managers); undefined when not a member. */
  userRole(orgId: string, workspaceId: string, userId: string): Promise<{ role: WorkspaceRole; email: string | null } | undefined>;
  /** The organisation a JWT without `organisation_id` belongs to (the deployment's). */
  defaultOrganisation(): Promise<string | undefined>;
  organisationExists(orgId: string): Promise<boolean>;
  /** The organisation's `session_settings.max_session_ttl` in seconds, or null. */
  maxSessionTtl(orgId: string): Promise<number | null>;
  /** Forgets anything cached (after admin changes in this process). */
  clear?(): void;
}

interface Entry {
  record: ApiKeyRecord | undefined;
  principal: Principal | undefined;
  /** Set when the key exists but may not be used (workspace archived, user removed). */
  refusal: GantryError | undefined;
  fetchedAt: number;
  refreshing: boolean;
}

export interface KeyAuthOptions {
  ttlMs: number;
  maxStaleMs?: number;
  /** Unknown keys are remembered this long, so a bad key cannot hammer the table. */
  negativeTtlMs?: number;
  maxEntries?: number;
  directory?: PrincipalDirectory;
  jwt?: JwtVerifier;
}

export type Surface = 'admin' | 'gateway';

const bearer = (h: string | null): string | null => {
  const m = h ? /^Bearer\s+(\S+)$/i.exec(h.trim()) : null;
  return m?.[1] ?? null;
};

export class KeyAuthenticator {
  readonly #repo: ApiKeyRepository;
  readonly #clock: Clock;
  readonly #ttl: number;
  readonly #maxStale: number;
  readonly #negativeTtl: number;
  readonly #maxEntries: number;
  readonly #directory: PrincipalDirectory | undefined;
  readonly #jwt: JwtVerifier | undefined;
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
    this.#directory = opts.directory;
    this.#jwt = opts.jwt;
  }

  /** The caller of a request: API key or JWT, from the headers the surface accepts. */
  authenticateRequest(headers: Headers, surface: Surface): Promise<Principal> {
    const key = headers.get('x-gw-api-key');
    if (key) return this.authenticate(key);
    const token = headers.get('x-gw-jwt') ?? (surface === 'admin' ? bearer(headers.get('authorization')) : null);
    // SDKs send their `apiKey` as a bearer: a `gw_` one is a Gantry key, never a JWT.
    if (token?.startsWith('gw_')) return this.authenticate(token);
    if (token) return this.authenticateJwt(token);
    return Promise.reject(
      new AuthenticationError(
        surface === 'admin'
          ? 'Missing credentials: send an API key in the x-gw-api-key header or as Authorization: Bearer, or a JWT as Authorization: Bearer'
          : 'Missing API key: send it in the x-gw-api-key header (or a JWT in x-gw-jwt)',
      ),
    );
  }

  /** Resolves the principal of a raw `x-gw-api-key` value (a JWT-shaped value is verified as a JWT). */
  async authenticate(rawKey: string | null | undefined): Promise<Principal> {
    if (!rawKey) throw new AuthenticationError('Missing API key: send it in the x-gw-api-key header');
    if (!rawKey.startsWith('gw_') && looksLikeJwt(rawKey)) return this.authenticateJwt(rawKey);
    return this.authenticateHash(hashApiKey(rawKey));
  }

  /** The principal of a key known by its hash (a console session keeps the hash, never the key). */
  async authenticateHash(hash: string): Promise<Principal> {
    const now = this.#clock.now();
    let entry = this.#cache.get(hash);
    const age = entry ? now - entry.fetchedAt : Infinity;
    const fresh = entry?.record ? age < this.#ttl : age < this.#negativeTtl;
    // A key a rotation replaced is never served stale: a later rotation elsewhere may have retired it.
    const previous = entry?.record !== undefined && entry.record.key_hash !== hash;
    if (!entry || (!fresh && (age >= this.#maxStale || !entry.record || previous))) {
      const known = entry?.record ? entry : undefined;
      try {
        entry = await this.#load(hash);
      } catch (err) {
        // The table cannot be read (health says degraded): a key that worked keeps working meanwhile.
        if (!known) throw err;
        entry = known;
      }
    } else if (!fresh && !entry.refreshing) {
      const stale = entry;
      stale.refreshing = true;
      // A failed or discarded refresh leaves the stale entry in place: let the next request retry.
      void this.#load(hash)
        .catch(() => undefined)
        .then(() => {
          stale.refreshing = false;
        });
    }
    return this.#check(entry, hash, now);
  }

  invalidate(hash: string): void {
    this.#generation++;
    this.#cache.delete(hash);
  }

  /** After a rotation, update or delete: every hash cached for this key (current, previous, older). */
  invalidateKey(keyId: string): void {
    this.#generation++;
    for (const [hash, entry] of this.#cache) if (entry.record?.id === keyId) this.#cache.delete(hash);
  }

  /** After a change that affects many keys (a workspace archived, a member removed or re-roled). */
  invalidateAll(): void {
    this.#generation++;
    this.#cache.clear();
    this.#directory?.clear?.();
  }

  async #load(hash: string): Promise<Entry> {
    const generation = this.#generation;
    const record = await this.#repo.getByHash(hash);
    let principal: Principal | undefined;
    let refusal: GantryError | undefined;
    if (record) {
      const resolved = await this.#resolve(record);
      if ('refusal' in resolved) refusal = resolved.refusal;
      else principal = resolved.principal;
    }
    const entry: Entry = { record, principal, refusal, fetchedAt: this.#clock.now(), refreshing: false };
    // An invalidate ran while we read: what we read may predate it, so serve it once, cache nothing.
    if (generation !== this.#generation) return entry;
    if (this.#cache.size >= this.#maxEntries) {
      const oldest = this.#cache.keys().next();
      if (!oldest.done) this.#cache.delete(oldest.value);
    }
    this.#cache.set(hash, entry);
    return entry;
  }

  async #resolve(r: ApiKeyRecord): Promise<{ principal: Principal } | { refusal: GantryError }> {
    const base = toPrincipal(r);
    let role: Role = base.role;
    let email: string | null = null;
    let defaults = base.defaults;
    if (r.workspace_id && this.#directory) {
      const ws = await this.#directory.workspace(r.organisation_id, r.workspace_id);
      if (!ws) return { refusal: new AuthenticationError('The workspace of this API key no longer exists') };
      if (ws.status === 'archived') return { refusal: new ForbiddenError(`The workspace of this API key (${ws.slug}) is archived`) };
      defaults = withWorkspaceDefaults(defaults, ws);
      if (r.type === 'workspace-user' && r.user_id) {
        const membership = await this.#directory.userRole(r.organisation_id, r.workspace_id, r.user_id);
        if (!membership) return { refusal: new AuthenticationError("This API key's user is no longer a member of its workspace") };
        role = membership.role;
        email = membership.email;
      }
    }
    return { principal: { ...base, role, email, defaults } };
  }

  #check(entry: Entry, hash: string, now: number): Principal {
    const { record, principal, refusal } = entry;
    if (!record) throw new AuthenticationError('Invalid API key');
    if (record.status === 'expired') throw new AuthenticationError('This API key has expired');
    if (record.expires_at && Date.parse(record.expires_at) <= now) {
      throw new AuthenticationError('This API key has expired');
    }
    if (record.key_hash !== hash) {
      // The key a rotation replaced: accepted until its transition period ends.
      const until = record.previous_key_hash === hash && record.previous_key_expires_at ? Date.parse(record.previous_key_expires_at) : -Infinity;
      if (until <= now) throw new AuthenticationError('This API key was rotated and its transition period has ended: use the new key');
    }
    if (refusal) throw refusal;
    if (!principal) throw new AuthenticationError('Invalid API key');
    return principal;
  }

  /** Verifies a JWT and maps its claims to a principal of the organisation and workspace it names. */
  async authenticateJwt(token: string): Promise<Principal> {
    if (!this.#jwt || !this.#directory) {
      throw new AuthenticationError('JWT authentication is not enabled on this deployment (set GW_JWKS_URL)');
    }
    const id = await this.#jwt.verify(token);
    const orgId = id.organisationId ?? (await this.#directory.defaultOrganisation());
    if (!orgId || !(await this.#directory.organisationExists(orgId))) {
      throw new AuthenticationError(`The token's organisation_id ${id.organisationId ?? ''} is not an organisation of this deployment`);
    }
    await this.#checkSession(id, orgId);
    let workspaceId: string | null = null;
    let defaults: ApiKeyDefaults | null = null;
    if (id.workspace) {
      const ws = await this.#directory.workspace(orgId, id.workspace);
      if (!ws) throw new AuthenticationError(`The token's workspace_id ${id.workspace} is not a workspace of the organisation`);
      if (ws.status === 'archived') throw new ForbiddenError(`The token's workspace (${ws.slug}) is archived`);
      workspaceId = ws.id;
      defaults = withWorkspaceDefaults(null, ws);
    }
    return { ...jwtPrincipal(id, orgId, workspaceId), defaults: workspaceId ? defaults : null };
  }

  async #checkSession(id: JwtIdentity, orgId: string): Promise<void> {
    const maxTtl = await this.#directory?.maxSessionTtl(orgId);
    if (!maxTtl) return;
    if (id.sessionStartedAt === null) {
      throw new AuthenticationError(`The organisation limits sessions to ${maxTtl} s: the token must carry auth_time or iat; sign in again`);
    }
    const age = Math.floor(this.#clock.now() / 1000) - id.sessionStartedAt;
    if (age > maxTtl) {
      throw new AuthenticationError(`The session is older than the organisation's max_session_ttl (${age} s > ${maxTtl} s): re-authenticate`, {
        headers: { 'www-authenticate': 'Bearer error="invalid_token", error_description="session too old; re-authenticate"' },
      });
    }
  }
}

/**
 * The workspace's default metadata (`defaults.metadata`) under the key's own: every request of the
 * workspace carries it, and the request's `x-gw-metadata` still wins over both.
 */
function withWorkspaceDefaults(defaults: ApiKeyDefaults | null, ws: WorkspaceRecord): ApiKeyDefaults | null {
  const wsMeta = ws.defaults?.metadata;
  if (!wsMeta || typeof wsMeta !== 'object' || Array.isArray(wsMeta)) return defaults;
  const inherited = Object.fromEntries(Object.entries(wsMeta as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string'));
  return { ...defaults, metadata: { ...inherited, ...defaults?.metadata } };
}

function jwtPrincipal(id: JwtIdentity, organisationId: string, workspaceId: string | null): Principal {
  const organisationRole = id.role === 'owner' || id.role === 'admin';
  return {
    kind: 'jwt',
    keyId: `jwt:${id.subject}`,
    organisationId,
    workspaceId: organisationRole ? null : workspaceId,
    userId: id.subject,
    email: id.email,
    keyType: organisationRole ? 'organisation-service' : 'workspace-user',
    role: id.role,
    owner: false,
    scopes: new Set(id.scopes),
    defaults: null,
    limits: null,
  };
}

/** The principal of a key record as stored (role from its type; user keys are resolved on load). */
export function toPrincipal(r: ApiKeyRecord): Principal {
  return {
    kind: 'api-key',
    keyId: r.id,
    organisationId: r.organisation_id,
    workspaceId: r.workspace_id,
    userId: r.user_id,
    email: null,
    keyType: r.type,
    role: r.owner ? 'owner' : r.type === 'organisation-service' ? 'admin' : r.type === 'workspace-service' ? 'manager' : 'member',
    owner: r.owner,
    scopes: new Set(r.scopes),
    defaults: r.defaults ?? null,
    limits: {
      usage_limits: r.usage_limits ?? null,
      rate_limits: r.rate_limits ?? null,
      reset_usage: r.reset_usage ?? 0,
      last_reset_at: r.last_reset_at,
    },
  };
}

/**
 * The directory on the table. Reads are cached for `ttlMs` (JWTs are verified on every request, so
 * their organisation and workspace must not cost a read each time); `clear` forgets them.
 */
export function tableDirectory(repos: Repositories, clock: Clock, ttlMs: number): PrincipalDirectory {
  const cache = new Map<string, { at: number; value: Promise<unknown> }>();
  const cached = <T>(key: string, load: () => Promise<T>): Promise<T> => {
    const now = clock.now();
    const hit = cache.get(key);
    if (hit && now - hit.at < ttlMs) return hit.value as Promise<T>;
    const value = load();
    if (cache.size > 10_000) cache.clear();
    cache.set(key, { at: now, value });
    // A failed read is not remembered.
    value.catch(() => cache.delete(key));
    return value;
  };
  const organisation = (orgId: string) => cached(`org/${orgId}`, () => repos.organisations.get(orgId));
  return {
    workspace: (orgId, idOrSlug) => cached(`ws/${orgId}/${idOrSlug}`, () => repos.workspaces.resolve(orgId, idOrSlug)),
    async userRole(orgId, workspaceId, userId) {
      // Entities rather than the identity repository: the gateway bundle stays small.
      const [user, member] = await Promise.all([
        repos.table.get(User, { pk: `ORG#${orgId}`, sk: `USER#${userId}` }, true),
        repos.table.get(Member, memberKey(orgId, workspaceId, userId), true),
      ]);
      if (!user) return undefined;
      if (user.role === 'owner' || user.role === 'admin') return { role: 'manager', email: user.email };
      return member ? { role: member.role, email: user.email } : undefined;
    },
    defaultOrganisation: () => cached('default-org', async () => (await repos.bootstrap.get())?.organisation_id),
    organisationExists: async (orgId) => (await organisation(orgId)) !== undefined,
    maxSessionTtl: async (orgId) => (await organisation(orgId))?.session_settings?.max_session_ttl ?? null,
    clear: () => cache.clear(),
  };
}

/** The authenticator of a process: keys on the table, JWTs when GW_JWKS_URL is set. */
export function createKeyAuthenticator(config: AppConfig, repos: Repositories, clock: Clock): KeyAuthenticator {
  return new KeyAuthenticator(repos.apiKeys, clock, {
    ttlMs: config.keyCacheTtlMs,
    directory: tableDirectory(repos, clock, config.keyCacheTtlMs),
    ...(config.jwt ? { jwt: new JwtVerifier(config.jwt, clock) } : {}),
  });
}
