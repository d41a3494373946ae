/** Sealed MCP sessions: only the principal and server that opened one can use it, and only until it expires. */
import { describe, expect, it } from 'vitest';
import { openSession, sealSession, SESSION_TTL_MS, SessionRefusal } from '../../../../../layers/core/src/mcp/gateway/session.ts';
import { FileCipher } from '../../../../../layers/core/src/ports/local/cipher-file.ts';

const owner = { principal: 'key-1', serverId: 'srv-1' };
const T0 = Date.UTC(2026, 10, 24);

async function refusal(p: Promise<unknown>): Promise<number> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SessionRefusal);
  return (err as SessionRefusal).status;
}

describe('sealed MCP sessions', () => {
  const cipher = new FileCipher();

  it('carries the upstream id, which the token does not show', async () => {
    const token = await sealSession(cipher, owner, 'upstream-abc', T0);
    expect(token).not.toContain('upstream-abc');
    expect(token).toMatch(/^[\x21-\x7e]+$/);
    expect(await openSession(cipher, token, owner, T0 + 1000)).toBe('upstream-abc');
  });

  it('is unknown (404) to another principal, another server, after expiry, or when altered; malformed is 400', async () => {
    const token = await sealSession(cipher, owner, 'upstream-abc', T0);
    expect(await refusal(openSession(cipher, token, { ...owner, principal: 'key-2' }, T0))).toBe(404);
    expect(await refusal(openSession(cipher, token, { ...owner, serverId: 'srv-2' }, T0))).toBe(404);
    expect(await refusal(openSession(cipher, token, owner, T0 + SESSION_TTL_MS))).toBe(404);
    expect(await openSession(cipher, token, owner, T0 + SESSION_TTL_MS - 1)).toBe('upstream-abc');
    const altered = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
    expect(await refusal(openSession(cipher, altered, owner, T0))).toBe(404);
    expect(await refusal(openSession(new FileCipher(), token, owner, T0))).toBe(404);
    expect(await refusal(openSession(cipher, 'has space', owner, T0))).toBe(400);
    expect(await refusal(openSession(cipher, 'x'.repeat(4097), owner, T0))).toBe(400);
  });
});
