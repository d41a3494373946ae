/**
 * `/v1/console/session`: sign in (a key or an id_token for a cookie), the session, sign out. These
 * routes check their own credential, so they are public admin routes (audited like the others);
 * docs/console.md describes the contract the console's pages rely on.
 */
import * as z from 'zod';
import { AuthenticationError, ValidationError } from '../../http/errors.ts';
import { jsonResponse } from '../../http/json.ts';
import type { Principal } from '../../kernel/principal.ts';
import { parseWith, type PublicAdminRoute, type PublicContext } from '../route.ts';
import { checkCsrf, clearedSessionCookie, ConsoleSessions, sessionCookie, sessionCookieOf, signInWithKey } from './session.ts';

const SESSION_PATH = '/v1/console/session';
const AUDIT = { resourceType: 'console_sessions' };

const signInBody = z.strictObject({
  api_key: z.string().min(1).max(4096).optional(),
  id_token: z.string().min(1).max(16_384).optional(),
});

/** A session's answers are never cached: they carry the CSRF token. */
const NO_STORE = { 'cache-control': 'no-store' };

function answer(status: number, body: unknown, cookie: string): Response {
  const res = body === null ? new Response(null, { status, headers: NO_STORE }) : jsonResponse(body, status, NO_STORE);
  res.headers.append('set-cookie', cookie);
  return res;
}

async function signIn(ctx: PublicContext): Promise<Response> {
  // JSON only: a cross-site HTML form cannot send it without a CORS preflight (login CSRF).
  if (!/^application\/json\b/i.test(ctx.request.headers.get('content-type') ?? '')) {
    throw ValidationError.field('content-type', 'must be application/json (sign-in takes a JSON body)');
  }
  const body = parseWith(signInBody, await ctx.body());
  let principal: Principal;
  let keyHash: string | null = null;
  if (body.api_key !== undefined) {
    ({ principal, keyHash } = await signInWithKey(ctx.deps, body.api_key));
  } else if (body.id_token !== undefined) {
    principal = await ctx.deps.keyAuth.authenticateJwt(body.id_token);
  } else {
    throw ValidationError.field('api_key', 'is required: an admin or workspace API key (or id_token, an OIDC token, where JWT sign-in is configured)');
  }
  ctx.actAs(principal);
  const sessions = new ConsoleSessions(ctx.deps);
  const { sessionId, record } = await sessions.open(principal, keyHash);
  const maxAge = Math.max(0, Math.floor((Date.parse(record.expires_at) - ctx.deps.clock.now()) / 1000));
  return answer(201, sessions.view(sessionId, record, principal), sessionCookie(sessionId, maxAge));
}

async function current(ctx: PublicContext): Promise<Response> {
  const sessionId = sessionCookieOf(ctx.request.headers);
  if (!sessionId) throw new AuthenticationError('No console session: sign in with POST /v1/console/session');
  const sessions = new ConsoleSessions(ctx.deps);
  const { record, principal } = await sessions.resolve(sessionId);
  return jsonResponse(sessions.view(sessionId, record, principal), 200, NO_STORE);
}

async function signOut(ctx: PublicContext): Promise<Response> {
  const sessionId = sessionCookieOf(ctx.request.headers);
  const sessions = new ConsoleSessions(ctx.deps);
  const live = sessionId
    ? await sessions.resolve(sessionId).catch((err: unknown) => (err instanceof AuthenticationError ? undefined : Promise.reject(err)))
    : undefined;
  // Nothing to revoke (no cookie, or a session already ended): the cookie is cleared all the same.
  if (sessionId && live) {
    checkCsrf('DELETE', ctx.request.headers, sessionId);
    ctx.actAs(live.principal);
    await sessions.close(sessionId);
  }
  return answer(204, null, clearedSessionCookie());
}

export const consoleSessionRoutes: PublicAdminRoute[] = [
  { method: 'POST', path: SESSION_PATH, handler: signIn, audit: { ...AUDIT, action: 'create' } },
  { method: 'GET', path: SESSION_PATH, handler: current, audit: { ...AUDIT, action: 'read' } },
  { method: 'DELETE', path: SESSION_PATH, handler: signOut, audit: { ...AUDIT, action: 'delete' } },
];
