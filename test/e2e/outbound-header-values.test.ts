/**
 * A value that cannot go into an HTTP header (a line break, a control character, a character
 * outside Latin-1) on its way to a provider: in a config's `api_key` or a provider option, in the
 * saved credential of a target, on chat, embeddings and the passthrough. Each is refused with a
 * 400 naming the field it came from, never a 500, and nothing reaches the provider.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

const BAD_VALUES: ReadonlyArray<[string, string]> = [
  ['a line feed', 'sk-abc\ndef'],
  ['a carriage return and line feed', 'sk-abc\r\nx-injected: 1'],
  ['a character outside Latin-1', 'sk-abc\u0101def'],
  ['an emoji', 'sk-abc\u{1F600}'],
  ['a NUL', 'sk-abc\u0000def'],
];

/** JSON for a header: every character past ASCII escaped, as an HTTP client can only send bytes. */
const headerJson = (value: unknown): string => JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

const ROUTES: ReadonlyArray<[string, string, unknown]> = [
  ['chat', '/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'Hi' }] }],
  ['embeddings', '/v1/embeddings', { model: 'm', input: 'Hi' }],
  ['the passthrough', '/v1/some/provider/path', { any: 'thing' }],
];

describe.each(['direct', 'lambda'] as const)('header values sent to a provider (%s mode)', (mode) => {
  let gw: TestGantry;
  let provider: MockOpenAI;
  let key: string;

  beforeAll(async () => {
    [gw, provider] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), provider?.close()]);
  });
  beforeEach(() => {
    provider.received.length = 0;
  });

  const post = (path: string, headers: Record<string, string>, body: unknown) =>
    fetch(gw.url + path, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  describe.each(ROUTES)('on %s', (_route, path, body) => {
    it.each(BAD_VALUES)('refuses an x-gw-config api_key with %s: 400 naming the field', async (_what, value) => {
      const config = headerJson({ provider: 'openai', api_key: value, custom_host: `${provider.url}/v1` });
      const res = await post(path, { 'x-gw-config': config }, body);
      const json = (await res.json()) as { error: { message: string; param: string | null } };
      expect(res.status).toBe(400);
      expect(json.error.param).toBe('x-gw-config');
      expect(json.error.message).toBe('api_key: must not contain line breaks, control characters or characters outside Latin-1');
      // The value, a credential, is not echoed.
      expect(json.error.message).not.toContain('sk-abc');
      expect(provider.received).toHaveLength(0);
    });

    it('refuses a provider option that would become a header, naming it', async () => {
      const config = headerJson({ provider: 'openai', api_key: 'sk-good-key', custom_host: `${provider.url}/v1`, openai_organization: 'org\r\nx: y' });
      const res = await post(path, { 'x-gw-config': config }, body);
      const json = (await res.json()) as { error: { message: string; param: string | null } };
      expect(res.status).toBe(400);
      expect(json.error.message).toBe('openai_organization: must not contain line breaks, control characters or characters outside Latin-1');
      expect(provider.received).toHaveLength(0);
    });

    it('refuses the same in a target of a fallback, with its path', async () => {
      const config = headerJson({
        strategy: { mode: 'fallback' },
        targets: [
          { provider: 'openai', api_key: 'sk-good-key', custom_host: `${provider.url}/v1` },
          { provider: 'openai', api_key: 'sk-\u2028', custom_host: `${provider.url}/v1` },
        ],
      });
      const res = await post(path, { 'x-gw-config': config }, body);
      const json = (await res.json()) as { error: { message: string } };
      expect(res.status).toBe(400);
      expect(json.error.message).toBe('targets[1].api_key: must not contain line breaks, control characters or characters outside Latin-1');
    });
  });

  it.each(ROUTES)('refuses a stored credential that cannot be sent, on %s: 400 naming it, not a 500', async (_route, path, body) => {
    // Stored through the admin API, which takes any text as a key: the outbound client's own guard answers.
    const slug = `vk-bad-${path.length}`;
    const created = await gw.admin('POST', '/v1/virtual-keys', {
      name: slug,
      slug,
      workspace_id: 'default',
      provider: 'openai',
      key: 'sk-stored\nkey',
      configurations: { custom_host: `${provider.url}/v1` },
    });
    expect(created.status).toBe(200);
    const res = await post(path, { 'x-gw-virtual-key': slug }, body);
    const json = (await res.json()) as { error: { message: string; param: string | null } };
    expect(res.status).toBe(400);
    expect(json.error.message).toMatch(/^config\.api_key \(stored with the managed provider or virtual key\): must not contain line breaks/);
    expect(json.error.message).not.toContain('sk-stored');
    expect(provider.received).toHaveLength(0);
  });

  it('accepts Latin-1 letters in an api_key (they can be sent)', async () => {
    const config = headerJson({ provider: 'openai', api_key: 'sk-caf\u00e9-key', custom_host: `${provider.url}/v1` });
    const res = await post('/v1/chat/completions', { 'x-gw-config': config }, ROUTES[0]![2]);
    expect(res.status).toBe(200);
    expect(provider.received).toHaveLength(1);
  });
});
