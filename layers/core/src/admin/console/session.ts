/**
 * Console sessions: an admin or workspace API key (or an OIDC id_token) is exchanged once for an
 * opaque, HttpOnly `gw_console` cookie, so no key ever lives where page scripts can read it. The
 * server stays the authority: every request re-resolves the principal (an API key session re-checks
 * the key by its hash, so revoking or expiring the key ends the session), and unsafe methods need
 * the session's CSRF token in `x-gw-csrf`. A request that carries a key header uses the key.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { parse, serialize } from 'hono/utils/cookie';
import type { CoreDeps } from '../../deps.ts';
import { AuthenticationError, ForbiddenError } from '../../http/errors.ts';
import { hashApiKey } from '../../policy/api-key-secret.ts';
import type { Principal } from '../../kernel/principal.ts';
import { SCOPES } from '../../policy/scopes.ts';
import { ConsoleSessionRepository, type ConsoleSessionRecord } from '../../store/console-session.ts';

export const CONSOLE_COOKIE = 'gw_console';
export const CSRF_HEADER = 'x-gw-csrf';
/** Eight hours unless GW_CONSOLE_SESSION_TTL_SECONDS says otherwise. */
export const DEFAULT_CONSOLE_SESSION_TTL = 28_800;

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The CSRF token is derived from the cookie's value: only its holder can compute it, and none is stored. */
const csrfTokenOf = (sessionId: string): string => hash('sha256', `gw-console-csrf:${sessionId}`, 'base64url');
const idHashOf = (sessionId: string): string => hash('sha256', sessionId, 'hex');

/** What sign-in and `GET /v1/console/session` answer (never any key material). */
export interface SessionView {
  principal: {
    id: string;
    kind: 'api_key' | 'jwt';
    type: string;
    name: string | null;
    email: string | null;
    organisation_id: string;
    workspace_id: string | null;
    role: string;
  };
  scopes: string[];
  csrf_token: string;
  expires_at: string;
}

/** The cookie's value on a request, if any. */
export function sessionCookieOf(headers: Headers): string | undefined {
  const raw = headers.get('cookie');
  if (!raw) return undefined;
  const value = parse(raw, CONSOLE_COOKIE)[CONSOLE_COOKIE];
  return value || undefined;
}

/** Whether a request names a credential of its own (it then wins over the cookie). */
const hasKeyHeader = (h: Headers): boolean => h.has('x-gw-api-key') || h.has('x-gw-jwt') || h.has('authorization');

/** Set-Cookie for a new session; `Secure` always (browsers accept it on http://localhost and 127.0.0.1). */
export const sessionCookie = (sessionId: string, maxAge: number): string =>
  serialize(CONSOLE_COOKIE, sessionId, { maxAge, path: '/', httpOnly: true, secure: true, sameSite: 'Strict' });

export const clearedSessionCookie = (): string => serialize(CONSOLE_COOKIE, '', { maxAge: 0, path: '/', httpOnly: true, secure: true, sameSite: 'Strict' });

/** The scopes a principal holds in effect: the owner key holds every scope, whatever it lists. */
const effectiveScopes = (p: Principal): string[] => (p.owner ? [...SCOPES] : [...p.scopes].sort());

export class ConsoleSessions {
  readonly #deps: CoreDeps;
  readonly #repo: ConsoleSessionRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#repo = new ConsoleSessionRepository(deps.repos.table);
  }

  /** Opens a session for an authenticated principal; its id is returned once, for the cookie. */
  async open(principal: Principal, keyHash: string | null): Promise<{ sessionId: string; record: ConsoleSessionRecord }> {
    const now = this.#deps.clock.now();
    const org = await this.#deps.repos.organisations.get(principal.organisationId);
    const configured = this.#deps.config.consoleSessionTtlSeconds ?? DEFAULT_CONSOLE_SESSION_TTL;
    const ttl = Math.min(configured, org?.session_settings?.max_session_ttl ?? Infinity);
    const sessionId = randomBytes(32).toString('base64url');
    const record: ConsoleSessionRecord = {
      id_hash: idHashOf(sessionId),
      organisation_id: principal.organisationId,
      kind: principal.kind,
      principal_id: principal.keyId,
      name: await this.#nameOf(principal),
      key_hash: keyHash,
      jwt: principal.kind === 'jwt' ? jwtIdentity(principal) : null,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + ttl * 1000).toISOString(),
    };
    await this.#repo.put(record);
    return { sessionId, record };
  }

  async #nameOf(p: Principal): Promise<string | null> {
    if (p.kind === 'jwt') return p.email;
    return (await this.#deps.repos.apiKeys.getById(p.organisationId, p.keyId))?.name ?? null;
  }

  /** The session behind a cookie and who it acts as; 401 once signed out, expired, or its key is gone. */
  async resolve(sessionId: string): Promise<{ record: ConsoleSessionRecord; principal: Principal }> {
    const idHash = idHashOf(sessionId);
    const record = await this.#repo.get(idHash);
    if (!record) throw new AuthenticationError('The console session is not valid (signed out or expired): sign in again');
    if (Date.parse(record.expires_at) <= this.#deps.clock.now()) {
      await this.#repo.delete(idHash);
      throw new AuthenticationError('The console session has expired: sign in again');
    }
    if (record.kind === 'jwt' || !record.key_hash) return { record, principal: jwtPrincipal(record) };
    try {
      return { record, principal: await this.#deps.keyAuth.authenticateHash(record.key_hash) };
    } catch (err) {
      if (!(err instanceof AuthenticationError)) throw err;
      // The key was revoked, expired or rotated out: the session ends with it.
      await this.#repo.delete(idHash);
      throw new AuthenticationError(`The API key this console session signed in with no longer authenticates (${err.message}): sign in again`);
    }
  }

  async close(sessionId: string): Promise<void> {
    await this.#repo.delete(idHashOf(sessionId));
  }

  view(sessionId: string, record: ConsoleSessionRecord, p: Principal): SessionView {
    return {
      principal: {
        id: p.kind === 'jwt' ? (p.userId ?? p.keyId) : p.keyId,
        kind: p.kind === 'jwt' ? 'jwt' : 'api_key',
        type: p.keyType,
        name: record.name,
        email: p.email,
        organisation_id: p.organisationId,
        workspace_id: p.workspaceId,
        role: p.role,
      },
      scopes: effectiveScopes(p),
      csrf_token: csrfTokenOf(sessionId),
      expires_at: record.expires_at,
    };
  }
}

function jwtIdentity(p: Principal): ConsoleSessionRecord['jwt'] {
  return { user_id: p.userId ?? p.keyId, email: p.email, role: p.role, workspace_id: p.workspaceId, key_type: p.keyType, scopes: [...p.scopes] };
}

function jwtPrincipal(r: ConsoleSessionRecord): Principal {
  const id = r.jwt;
  if (!id) throw new AuthenticationError('The console session is not valid: sign in again');
  return {
    kind: 'jwt',
    keyId: r.principal_id,
    organisationId: r.organisation_id,
    workspaceId: id.workspace_id,
    userId: id.user_id,
    email: id.email,
    keyType: id.key_type,
    role: id.role,
    owner: false,
    scopes: new Set(id.scopes),
    defaults: null,
    limits: null,
  };
}

/** Refuses an unsafe method whose `x-gw-csrf` header is not this session's token. */
export function checkCsrf(method: string, headers: Headers, sessionId: string): void {
  if (SAFE_METHODS.has(method)) return;
  const sent = Buffer.from(headers.get(CSRF_HEADER) ?? '');
  const expected = Buffer.from(csrfTokenOf(sessionId));
  if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) {
    throw new ForbiddenError(`A console session needs its csrf_token in the ${CSRF_HEADER} header on ${method} requests (missing or not this session's)`, {
      param: CSRF_HEADER,
    });
  }
}

/**
 * The caller of an admin request: the API key or JWT it carries, else its console session (which
 * must then carry the CSRF token on unsafe methods).
 */
export async function adminPrincipal(deps: CoreDeps, request: Request): Promise<Principal> {
  const headers = request.headers;
  const sessionId = hasKeyHeader(headers) ? undefined : sessionCookieOf(headers);
  if (!sessionId) return deps.keyAuth.authenticateRequest(headers, 'admin');
  const { principal } = await new ConsoleSessions(deps).resolve(sessionId);
  checkCsrf(request.method, headers, sessionId);
  return principal;
}

/** Who an `api_key` sign-in acts as, and the key's hash the session keeps (a JWT belongs in `id_token`). */
export async function signInWithKey(deps: CoreDeps, apiKey: string): Promise<{ principal: Principal; keyHash: string }> {
  const principal = await deps.keyAuth.authenticate(apiKey);
  if (principal.kind !== 'api-key') throw new AuthenticationError('api_key takes a Gantry API key: sign in with an OIDC token as id_token');
  return { principal, keyHash: hashApiKey(apiKey) };
}
