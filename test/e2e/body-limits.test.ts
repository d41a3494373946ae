/**
 * Oversized bodies: the caller is authenticated from the headers before any large body is read, a
 * body over its endpoint's limit is refused from its Content-Length (413) before it is read, and one
 * without a Content-Length is cut once it passes the limit. The answer comes while the client is
 * still sending: nothing large is held. Through Lambda, API Gateway's 10 MB payload limit applies first.
 * An answer given before the body was read never leaves the connection stuck: it is closed after
 * the answer (`connection: close`), or the rest of the body is read and the next request answered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { earlyRefusal, requestHead } from '../support/raw-http.ts';
import { send } from '../support/send-body.ts';

const MiB = 1 << 20;

describe.each(['direct', 'lambda'] as const)('request body limits (%s mode)', (mode) => {
  let gw: TestGantry;
  let key: string;

  beforeAll(async () => {
    gw = await startGantry(mode);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await gw?.close();
  });

  const gateway = (k?: string) => ({ 'content-type': 'application/json', 'x-gw-provider': 'openai', ...(k ? { 'x-gw-api-key': k } : {}) });

  it('refuses an unauthenticated 256 MB body without reading it', async () => {
    const sent = await send(`${gw.url}/v1/chat/completions`, gateway(), 256 * MiB);
    // Directly: the key is checked from the headers first; through Lambda: API Gateway's limit.
    expect(sent.status).toBe(mode === 'direct' ? 401 : 413);
    expect(sent.written).toBeLessThan(64 * MiB);
  });

  it('refuses a JSON body over its limit from its Content-Length', async () => {
    const sent = await send(`${gw.url}/v1/chat/completions`, gateway(key), 40 * MiB);
    expect(sent.status).toBe(413);
    expect(sent.written).toBeLessThan(40 * MiB);
    if (mode === 'direct') {
      expect(JSON.parse(sent.body)).toMatchObject({
        error: { code: 'request_too_large', type: 'invalid_request_error', message: expect.stringContaining('32 MiB') },
      });
    }
  });

  it('cuts a body without Content-Length once it passes the limit', async () => {
    const sent = await send(`${gw.url}/v1/chat/completions`, gateway(key), 48 * MiB, true);
    // Through Lambda, API Gateway's limit closes the connection as it answers: the client may see the close first.
    expect(mode === 'direct' ? [413] : [413, 0]).toContain(sent.status);
    expect(sent.written).toBeLessThan(48 * MiB);
  });

  it("applies an endpoint's own limit (audio: 25 MiB)", async () => {
    const headers = { 'content-type': 'multipart/form-data; boundary=x', 'x-gw-provider': 'openai', 'x-gw-api-key': key };
    const sent = await send(`${gw.url}/v1/audio/transcriptions`, headers, 26 * MiB);
    expect(sent.status).toBe(413);
    if (mode === 'direct') expect(JSON.parse(sent.body).error.message).toContain('25 MiB');
  });

  it('still takes an ordinary body', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: gateway(key), body: JSON.stringify({ model: 'm', messages: [] }) });
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe('messages');
  });

  describe('an answer before the body is read never leaves a keep-alive connection hanging', () => {
    const next = requestHead('GET', '/v1/health', {});
    const cases = [
      { route: 'admin', method: 'POST', path: '/v1/prompts', headers: () => ({ 'x-gw-api-key': ADMIN_KEY }), size: 30 * MiB, status: [413] },
      { route: 'gateway', method: 'POST', path: '/v1/chat/completions', headers: () => gateway(key), size: 40 * MiB, status: [413] },
      { route: 'gateway, unauthenticated', method: 'POST', path: '/v1/chat/completions', headers: () => gateway(), size: 8 * MiB, status: [401] },
      { route: 'MCP', method: 'POST', path: '/mcp/no-such-server', headers: () => ({ 'x-gw-api-key': key }), size: 8 * MiB, status: [404] },
      { route: 'console', method: 'POST', path: '/console/', headers: () => ({}), size: 8 * MiB, status: [405] },
    ];

    it.each(cases.map((c) => [c.route, c] as const))('%s', async (_route, c) => {
      const head = requestHead(c.method, c.path, { 'content-type': 'application/json', 'content-length': String(c.size), ...c.headers() });
      const out = await earlyRefusal(gw.url, head, c.size, next);
      expect(c.status).toContain(out.first?.status);
      expect(out.then.kind).not.toBe('hang');
      // Closed: the answer said so. Kept: the next request on the socket is answered.
      if (out.then.kind === 'closed') expect(out.first?.headers.connection).toBe('close');
      if (out.then.kind === 'answered') expect(out.then.response.status).toBe(200);
    });
  });
});
