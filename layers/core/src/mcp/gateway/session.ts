/**
 * Sealed sessions: when an upstream MCP server opens a session (`Mcp-Session-Id`), the client gets
 * a token instead, encrypted and authenticated with the cipher port, that carries who may use it
 * (the principal and the server), the upstream's own session id and an expiry. Any instance can
 * open it, so no session table sits on the hot path and no replica ever says "session not found"
 * for a session another one started. The upstream id never reaches the client.
 */
import type { Cipher } from '../../ports/cipher.ts';

/** How long a sealed session stays usable; the client starts a new one after (MCP's 404 rule). */
export const SESSION_TTL_MS = 24 * 60 * 60 * 1000;

/** Visible ASCII only, as MCP requires of a session id, and a bound on what is decrypted. */
const WELL_FORMED = /^[\x21-\x7e]{1,4096}$/;

export interface SessionOwner {
  /** The API key id (or `jwt:<sub>`) that opened the session. */
  principal: string;
  serverId: string;
}

interface Sealed {
  p: string;
  s: string;
  u: string;
  e: number;
}

/** Why a presented session cannot be used: malformed (400) or unknown, foreign or expired (404). */
export class SessionRefusal extends Error {
  readonly status: 400 | 404;
  constructor(status: 400 | 404, message: string) {
    super(message);
    this.status = status;
  }
}

const contextOf = (serverId: string) => ({ purpose: 'mcp-session', server_id: serverId });

export async function sealSession(cipher: Cipher, owner: SessionOwner, upstreamId: string, now: number): Promise<string> {
  const sealed: Sealed = { p: owner.principal, s: owner.serverId, u: upstreamId, e: now + SESSION_TTL_MS };
  return cipher.encrypt(JSON.stringify(sealed), contextOf(owner.serverId));
}

/**
 * Tokens this instance has already decrypted, per cipher (one key): the same token always opens
 * to the same content, so a warm session skips the decryption. The checks below still run on
 * every call. Bounded; cleared when full.
 */
const opened = new WeakMap<Cipher, Map<string, Sealed>>();
const MAX_OPENED = 10_000;

async function decrypted(cipher: Cipher, token: string, serverId: string): Promise<Sealed> {
  let cache = opened.get(cipher);
  if (!cache) opened.set(cipher, (cache = new Map()));
  const hit = cache.get(token);
  if (hit) return hit;
  let sealed: Sealed;
  try {
    sealed = JSON.parse(await cipher.decrypt(token, contextOf(serverId))) as Sealed;
  } catch {
    throw new SessionRefusal(404, 'Session not found');
  }
  if (cache.size >= MAX_OPENED) cache.clear();
  cache.set(token, sealed);
  return sealed;
}

/** The upstream's session id inside a token, once the token is authentic, current and the caller's own. */
export async function openSession(cipher: Cipher, token: string, owner: SessionOwner, now: number): Promise<string> {
  if (!WELL_FORMED.test(token)) throw new SessionRefusal(400, 'Bad Request: Mcp-Session-Id must be visible ASCII of at most 4096 characters');
  const sealed = await decrypted(cipher, token, owner.serverId);
  // The same answer for each reason: a caller learns nothing about a session that is not theirs.
  if (sealed.p !== owner.principal || sealed.s !== owner.serverId || typeof sealed.u !== 'string' || !(sealed.e > now)) {
    throw new SessionRefusal(404, 'Session not found');
  }
  return sealed.u;
}
