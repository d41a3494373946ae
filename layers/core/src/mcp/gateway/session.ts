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

/** The upstream's session id inside a token, once the token is authentic, current and the caller's own. */
export async function openSession(cipher: Cipher, token: string, owner: SessionOwner, now: number): Promise<string> {
  if (!WELL_FORMED.test(token)) throw new SessionRefusal(400, 'Bad Request: Mcp-Session-Id must be visible ASCII of at most 4096 characters');
  let sealed: Sealed;
  try {
    sealed = JSON.parse(await cipher.decrypt(token, contextOf(owner.serverId))) as Sealed;
  } catch {
    throw new SessionRefusal(404, 'Session not found');
  }
  // The same answer for each reason: a caller learns nothing about a session that is not theirs.
  if (sealed.p !== owner.principal || sealed.s !== owner.serverId || typeof sealed.u !== 'string' || !(sealed.e > now)) {
    throw new SessionRefusal(404, 'Session not found');
  }
  return sealed.u;
}
