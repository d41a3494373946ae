/**
 * A provider that echoes the key it was sent ("Incorrect API key provided: sk-...") in an error,
 * a stream or a header: neither the client nor the request log (read back through the admin API)
 * ever sees the key, whether it came from x-gw-config, the client's own Authorization, a native
 * provider's own header, or a secret reference fetched from Vault.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockServer, type MockServer, type Recorded, type Reply } from '../support/mock-http.ts';
import { startMockVault, type MockVault } from '../support/mock-secret-managers.ts';
import { waitFor } from '../support/observability.ts';

type Json = Record<string, unknown>;
type Mode = 'json401' | 'sse' | 'header' | 'text' | 'anthropic401';

const MASK = '[REDACTED]';

/** The key the provider received, however it was sent. */
function keyOf(req: Recorded): string {
  const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
  return bearer ?? String(req.headers['x-api-key'] ?? req.headers['api-key'] ?? '');
}

/** Answers that echo the key: a JSON 401, an SSE stream with the key split across chunks, a header, plain text. */
function echo(mode: Mode, key: string): Reply {
  const half = Math.floor(key.length / 2);
  switch (mode) {
    case 'json401':
      return { status: 401, json: { error: { message: `Incorrect API key provided: ${key}.`, type: 'invalid_request_error', code: 'invalid_api_key' } } };
    case 'anthropic401':
      return { status: 401, json: { type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key: ${key}` } } };
    case 'sse': {
      const event = (content: string) =>
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
      const text = `${event('Your key is ')}${event(key)}data: [DONE]\n\n`;
      const at = text.indexOf(key) + half;
      return { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [text.slice(0, at - 3), text.slice(at - 3, at), text.slice(at)] };
    }
    case 'header':
      return { status: 401, headers: { 'x-request-id': `req-${key}`, 'x-echo-authorization': `Bearer ${key}` }, json: { error: { message: 'Unauthorized' } } };
    case 'text':
      return { status: 401, headers: { 'content-type': 'text/plain' }, text: `401 Unauthorized: the key ${key} is not valid` };
  }
}

describe.each(['direct', 'lambda'] as const)('provider secret echo (%s mode)', (mode) => {
  let gw: TestGantry;
  let provider: MockServer;
  let vault: MockVault;
  let key: string;
  let next: Mode = 'json401';
  let n = 0;

  beforeAll(async () => {
    [gw, provider, vault] = await Promise.all([startGantry(mode), startMockServer((req) => echo(next, keyOf(req))), startMockVault()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), provider?.close(), vault?.close()]);
  });

  // A shape the log's own redaction does not recognise (not sk-...): only the scrubbing can hide it.
  const secret = (label: string) => `${label}-${randomUUID()}`;

  async function call(path: string, headers: Record<string, string>, body?: Json): Promise<{ status: number; text: string; headers: string; trace: string }> {
    const trace = `${mode}-echo-${++n}`;
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'content-type': 'application/json', 'x-gw-trace-id': trace, ...headers },
      body: JSON.stringify(body ?? { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    return { status: res.status, text: await res.text(), headers: JSON.stringify([...res.headers]), trace };
  }

  /** The request's stored log, in full, as a member with logs.view reads it. */
  async function logOf(trace: string): Promise<string> {
    const row = await waitFor(gw.deps, async () => {
      const res = await gw.admin('GET', `/v1/logs?workspace_id=default&trace_id=${trace}`);
      return (res.json.data as Json[] | undefined)?.[0];
    });
    const full = await gw.admin('GET', `/v1/logs/${String(row.id)}`);
    expect(full.status).toBe(200);
    return JSON.stringify(full.json);
  }

  async function expectNoTrace(answer: { text: string; headers: string; trace: string }, value: string): Promise<string> {
    expect(answer.text).not.toContain(value);
    expect(answer.headers).not.toContain(value);
    const log = await logOf(answer.trace);
    expect(log).not.toContain(value);
    // Nor a fragment long enough to matter.
    expect(log).not.toContain(value.slice(-12));
    expect(answer.text).not.toContain(value.slice(-12));
    return log;
  }

  const config = (apiKey: string, extra: Json = {}) => ({
    'x-gw-config': JSON.stringify({ provider: 'openai', api_key: apiKey, custom_host: `${provider.url}/v1`, ...extra }),
  });

  it('a 401 that echoes the key of x-gw-config reaches neither the client nor the log', async () => {
    next = 'json401';
    const k = secret('config');
    const res = await call('/v1/chat/completions', config(k));
    expect(res.status).toBe(401);
    expect(provider.received.at(-1)?.headers.authorization).toBe(`Bearer ${k}`);
    expect(JSON.parse(res.text)).toEqual({
      error: { message: `Incorrect API key provided: ${MASK}.`, type: 'invalid_request_error', code: 'invalid_api_key' },
    });
    const log = await expectNoTrace(res, k);
    expect(log).toContain(`Incorrect API key provided: ${MASK}.`);
  });

  it("the client's own key, echoed, stays out of the log (and out of the answer)", async () => {
    next = 'json401';
    const k = secret('client');
    const res = await call('/v1/chat/completions', { 'x-gw-provider': 'openai', 'x-gw-custom-host': `${provider.url}/v1`, authorization: `Bearer ${k}` });
    expect(res.status).toBe(401);
    expect(res.text).toContain(MASK);
    await expectNoTrace(res, k);
  });

  it('a stream that echoes the key split across chunks is masked whole', async () => {
    next = 'sse';
    const k = secret('stream');
    const res = await call('/v1/chat/completions', config(k), { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
    expect(res.status).toBe(200);
    const deltas = res.text
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => (JSON.parse(e.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '');
    expect(deltas.join('')).toBe(`Your key is ${MASK}`);
    await expectNoTrace(res, k);
  });

  it('a header that echoes the key is masked, on a unified route and on the passthrough', async () => {
    next = 'header';
    const k = secret('header');
    const unified = await call('/v1/chat/completions', config(k));
    expect(unified.status).toBe(401);
    expect(unified.headers).toContain(`req-${MASK}`);
    await expectNoTrace(unified, k);

    const raw = await call(
      '/v1/some/provider/endpoint',
      { 'x-gw-provider': 'openai', 'x-gw-custom-host': `${provider.url}/v1`, authorization: `Bearer ${k}` },
      { anything: true },
    );
    expect(raw.status).toBe(401);
    expect(provider.received.at(-1)?.path).toBe('/v1/some/provider/endpoint');
    expect(raw.headers).toContain(`Bearer ${MASK}`);
    await expectNoTrace(raw, k);
  });

  it('a plain-text error that echoes the key is masked, wrapped or passed through', async () => {
    next = 'text';
    const k = secret('text');
    const unified = await call('/v1/chat/completions', config(k));
    expect(unified.status).toBe(401);
    expect(unified.text).toContain(`the key ${MASK} is not valid`);
    await expectNoTrace(unified, k);

    const raw = await call(
      '/v1/some/provider/endpoint',
      { 'x-gw-provider': 'openai', 'x-gw-custom-host': `${provider.url}/v1`, authorization: `Bearer ${k}` },
      {},
    );
    expect(raw.text).toBe(`401 Unauthorized: the key ${MASK} is not valid`);
    await expectNoTrace(raw, k);
  });

  it("a native provider's key in its own header (Anthropic's x-api-key) is masked in its translated error", async () => {
    next = 'anthropic401';
    const k = secret('anthropic');
    const res = await call(
      '/v1/chat/completions',
      { 'x-gw-config': JSON.stringify({ provider: 'anthropic', api_key: k, custom_host: provider.url }) },
      { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] },
    );
    expect(provider.received.at(-1)?.headers['x-api-key']).toBe(k);
    expect(res.status).toBe(401);
    expect(res.text).toContain(MASK);
    await expectNoTrace(res, k);
  });

  it('a key fetched from Vault through a secret reference, echoed, reaches neither the client nor the log', async () => {
    next = 'json401';
    const k = secret('vault');
    const slug = `echo-${mode}`;
    vault.put(`secret/echo-${mode}`, { api_key: k });
    const ok = async (p: string, body: Json) => {
      const r = await gw.admin('POST', p, body);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
    };
    await ok('/v1/secret-references', {
      name: `Echo ${mode}`,
      slug: `ref-${slug}`,
      manager_type: 'hashicorp_vault',
      auth_config: { vault_addr: vault.url, vault_auth_type: 'token', vault_token: vault.rootToken },
      secret_path: `secret/echo-${mode}`,
      secret_key: 'api_key',
    });
    await ok('/v1/integrations', {
      name: `Echo ${mode}`,
      slug: `int-${slug}`,
      ai_provider_id: 'openai',
      configurations: { custom_host: `${provider.url}/v1` },
      secret_mappings: [{ target_field: 'key', secret_reference_id: `ref-${slug}` }],
    });
    await ok('/v1/providers', { name: `Echo ${mode}`, slug, integration_id: `int-${slug}`, workspace_id: 'default' });

    const res = await call('/v1/chat/completions', {}, { model: `@${slug}/gpt-4o-mini`, messages: [{ role: 'user', content: 'Hi' }] });
    expect(res.status).toBe(401);
    expect(provider.received.at(-1)?.headers.authorization).toBe(`Bearer ${k}`);
    expect(res.text).toContain(`Incorrect API key provided: ${MASK}.`);
    await expectNoTrace(res, k);
  });
});
