/**
 * The routing engine end to end: configs in x-gw-config (inline and saved) drive fallback, load
 * balancing, conditions, retries, timeouts and inheritance against several mock providers, through
 * the local server in both modes. Backoff waits go through an injected clock, so they are
 * asserted exactly and cost no time.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';

const MSG = [{ role: 'user' as const, content: 'Hi' }];

describe.each(['direct', 'lambda'] as const)('routing (%s mode)', (mode) => {
  let gw: TestGantry;
  let a: MockOpenAI;
  let b: MockOpenAI;
  let c: MockOpenAI;
  let key: string;
  const clock = new ManualClock(Date.UTC(2026, 5, 1));

  const target = (m: MockOpenAI, extra: Record<string, unknown> = {}) => ({ provider: 'openai', api_key: 'sk-t', custom_host: `${m.url}/v1`, ...extra });

  /** A raw call with an inline config; returns status, headers and JSON body. */
  async function call(config: unknown, opts: { body?: Record<string, unknown>; headers?: Record<string, string> } = {}) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'content-type': 'application/json',
        'x-gw-config': typeof config === 'string' ? config : JSON.stringify(config),
        ...opts.headers,
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: MSG, ...opts.body }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: (text.startsWith('{') ? JSON.parse(text) : {}) as Record<string, unknown> };
  }

  beforeAll(async () => {
    [gw, a, b, c] = await Promise.all([startGantry(mode, {}, { clock }), startMockOpenAI(), startMockOpenAI(), startMockOpenAI()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), a?.close(), b?.close(), c?.close()]);
  });
  beforeEach(() => {
    for (const m of [a, b, c]) {
      m.received.length = 0;
      m.queue.length = 0;
    }
    clock.sleeps.length = 0;
  });

  describe('fallback', () => {
    it('moves to the next target on a failure and says which one answered', async () => {
      a.queue.push({ kind: 'error', status: 503, body: '{"error":{"message":"down"}}' });
      const r = await call({ strategy: { mode: 'fallback' }, targets: [target(a), target(b)] });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
      expect(r.headers.get('x-gw-provider')).toBe('openai');
      expect(r.headers.get('x-gw-retry-attempt-count')).toBe('0');
      expect(r.headers.get('x-gw-trace-id')).toBeTruthy();
      expect([a.received.length, b.received.length]).toEqual([1, 1]);
    });

    it('stops at a status outside on_status_codes', async () => {
      a.queue.push({ kind: 'error', status: 500, body: '{"error":{"message":"boom"}}' });
      const r = await call({ strategy: { mode: 'fallback', on_status_codes: [429] }, targets: [target(a), target(b)] });
      expect(r.status).toBe(500);
      expect(r.headers.get('x-gw-last-used-option-index')).toBe('config.targets[0]');
      expect(b.received).toHaveLength(0);
    });

    it('does not fall through on a gateway-side error', async () => {
      const r = await call({ strategy: { mode: 'fallback' }, targets: [{ provider: 'nope', api_key: 'k' }, target(b)] });
      expect(r.status).toBe(400);
      expect((r.json.error as { message: string }).message).toContain('unknown provider');
      expect(b.received).toHaveLength(0);
    });

    it('returns the last failure when every target fails', async () => {
      a.queue.push({ kind: 'error', status: 503, body: '{"error":{"message":"a down"}}' });
      b.queue.push({ kind: 'error', status: 502, body: '{"error":{"message":"b down"}}' });
      const r = await call({ strategy: { mode: 'fallback' }, targets: [target(a), target(b)] });
      expect(r.status).toBe(502);
      expect(r.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
    });

    it('falls back when a target is unreachable or too slow (per-attempt request_timeout)', async () => {
      a.queue.push({ kind: 'delay', ms: 2_000 });
      const r = await call({
        strategy: { mode: 'fallback' },
        targets: [target(a, { request_timeout: 100 }), { provider: 'openai', custom_host: 'http://127.0.0.1:1/v1' }, target(c)],
      });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-gw-last-used-option-index')).toBe('config.targets[2]');
    });

    it('streams from the target that answered', async () => {
      a.queue.push({ kind: 'error', status: 429, body: '{"error":{"message":"slow down"}}' });
      const client = new OpenAI({
        baseURL: `${gw.url}/v1`,
        apiKey: 'unused',
        maxRetries: 0,
        defaultHeaders: { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify({ strategy: { mode: 'fallback' }, targets: [target(a), target(b)] }) },
      });
      const stream = await client.chat.completions.create({ model: 'm', messages: MSG, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe('Hello there');
      expect(b.received).toHaveLength(1);
    });
  });

  describe('load balancing and conditions', () => {
    it('never picks a weight-0 target', async () => {
      for (let i = 0; i < 8; i++) {
        const r = await call({ strategy: { mode: 'loadbalance' }, targets: [target(a, { weight: 0 }), target(b, { weight: 1 })] });
        expect(r.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
      }
      expect(a.received).toHaveLength(0);
    });

    it('routes on metadata, params and nested paths, with a default', async () => {
      const config = {
        strategy: {
          mode: 'conditional',
          conditions: [
            {
              query: { 'metadata.plan.tier': 'pro', $or: [{ 'params.model': { $regex: '^gpt-4' } }, { 'params.temperature': { $lt: 0.5 } }] },
              then: 'premium',
            },
            { query: { 'url.pathname': { $eq: '/v1/chat/completions' }, 'params.max_tokens': { $gte: 1000 } }, then: 'long' },
          ],
          default: 'basic',
        },
        targets: [target(a, { name: 'premium' }), target(b, { name: 'long' }), target(c, { name: 'basic' })],
      };
      const pro = await call(config, { headers: { 'x-gw-metadata': JSON.stringify({ plan: { tier: 'pro' } }) } });
      expect(pro.headers.get('x-gw-last-used-option-index')).toBe('config.targets[0]');
      // The $or alone matches, but its sibling (the tier) does not: the sibling is honoured.
      const free = await call(config, { headers: { 'x-gw-metadata': JSON.stringify({ plan: { tier: 'free' } }) } });
      expect(free.headers.get('x-gw-last-used-option-index')).toBe('config.targets[2]');
      const long = await call(config, { body: { max_tokens: 2000 } });
      expect(long.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
    });

    it('follows nesting to any depth', async () => {
      b.queue.push({ kind: 'error', status: 503, body: '{"error":{"message":"down"}}' });
      const r = await call({
        strategy: { mode: 'fallback' },
        targets: [{ strategy: { mode: 'loadbalance' }, targets: [target(a, { weight: 0 }), target(b)] }, target(c)],
      });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
      expect([a.received.length, b.received.length, c.received.length]).toEqual([0, 1, 1]);
    });
  });

  describe('retries', () => {
    it('retries listed statuses with exponential backoff and jitter, then succeeds', async () => {
      a.queue.push({ kind: 'error', status: 503, body: '{}' }, { kind: 'error', status: 500, body: '{}' });
      const r = await call({ ...target(a), retry: { attempts: 3 } });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-gw-retry-attempt-count')).toBe('2');
      expect(a.received).toHaveLength(3);
      expect(clock.sleeps).toHaveLength(2);
      expect(clock.sleeps[0]).toBeGreaterThanOrEqual(750);
      expect(clock.sleeps[0]).toBeLessThan(1250);
      expect(clock.sleeps[1]).toBeGreaterThanOrEqual(1500);
      expect(clock.sleeps[1]).toBeLessThan(2500);
    });

    it('answers -1 when the attempts run out', async () => {
      a.queue.push(...Array.from({ length: 3 }, () => ({ kind: 'error' as const, status: 502, body: '{"error":{"message":"x"}}' })));
      const r = await call({ ...target(a), retry: { attempts: 2 } });
      expect(r.status).toBe(502);
      expect(r.headers.get('x-gw-retry-attempt-count')).toBe('-1');
      expect(a.received).toHaveLength(3);
    });

    it('does not retry a status outside on_status_codes', async () => {
      a.queue.push({ kind: 'error', status: 503, body: '{"error":{"message":"x"}}' });
      const r = await call({ ...target(a), retry: { attempts: 3, on_status_codes: [429] } });
      expect(r.status).toBe(503);
      expect(r.headers.get('x-gw-retry-attempt-count')).toBe('0');
      expect(a.received).toHaveLength(1);
    });

    it('waits as long as Retry-After asks on a 429, within the 60 s budget', async () => {
      a.queue.push({ kind: 'error', status: 429, body: '{}', headers: { 'retry-after-ms': '1500' } });
      const ok = await call({ ...target(a), retry: { attempts: 2, use_retry_after_header: true } });
      expect(ok.status).toBe(200);
      expect(clock.sleeps).toEqual([1500]);

      clock.sleeps.length = 0;
      a.queue.push({ kind: 'error', status: 429, body: '{"error":{"message":"later"}}', headers: { 'retry-after': '61' } });
      const over = await call({ ...target(a), retry: { attempts: 2, use_retry_after_header: true } });
      expect(over.status).toBe(429);
      expect(over.headers.get('x-gw-retry-attempt-count')).toBe('-1');
      expect(clock.sleeps).toEqual([]);
    });
  });

  describe('inheritance and request shaping', () => {
    it('merges override_params, child values winning, and sends them to the provider', async () => {
      await call({
        strategy: { mode: 'single' },
        override_params: { model: 'parent-model', temperature: 0.1 },
        targets: [target(a, { override_params: { model: 'child-model' } })],
      });
      const sent = JSON.parse(a.received[0]!.body) as Record<string, unknown>;
      expect(sent.model).toBe('child-model');
      expect(sent.temperature).toBe(0.1);
      expect(sent.messages).toEqual(MSG);
    });

    it('inherits provider, api_key and custom_host from a parent', async () => {
      const r = await call({ ...target(b, { api_key: 'sk-parent' }), strategy: { mode: 'single' }, targets: [{ name: 'only' }] });
      expect(r.status).toBe(200);
      expect(b.received[0]!.headers.authorization).toBe('Bearer sk-parent');
    });

    it('forwards the listed headers, never x-gw-* ones', async () => {
      await call({ ...target(a), forward_headers: ['x-team', 'x-gw-api-key'] }, { headers: { 'x-team': 'search' } });
      expect(a.received[0]!.headers['x-team']).toBe('search');
      expect(a.received[0]!.headers['x-gw-api-key']).toBeUndefined();
      expect(JSON.stringify(a.received[0]!.headers)).not.toContain(key);
    });

    it('lets x-gw-request-timeout win over the config', async () => {
      a.queue.push({ kind: 'delay', ms: 1_500 });
      const r = await call({ ...target(a), request_timeout: 60_000 }, { headers: { 'x-gw-request-timeout': '100' } });
      expect(r.status).toBe(408);
    });
  });

  describe('validation', () => {
    it('refuses an invalid config before calling any provider, naming every problem', async () => {
      const r = await call({
        strategy: { mode: 'fallbackk' },
        targets: [target(a, { weight: -1 }), target(b, { retry: { attempts: 6 } })],
      });
      expect(r.status).toBe(400);
      const err = r.json.error as { message: string; code: string };
      expect(err.message).toContain('strategy.mode');
      expect(err.message).toContain('targets[0].weight');
      expect(err.message).toContain('targets[1].retry.attempts');
      expect(a.received.length + b.received.length).toBe(0);
    });

    it('refuses a config that is not JSON and one naming an unknown target', async () => {
      const bad = await call('{not json');
      expect(bad.status).toBe(400);
      expect((bad.json.error as { param: string }).param).toBe('x-gw-config');
      const unknown = await call({
        strategy: { mode: 'conditional', conditions: [{ query: { 'metadata.x': 1 }, then: 'ghost' }] },
        targets: [target(a, { name: 'real' })],
      });
      expect(unknown.status).toBe(400);
      expect((unknown.json.error as { message: string }).message).toContain('strategy.conditions[0].then');
    });
  });

  describe('saved configs', () => {
    it('creates, uses by slug and id, versions on update, and deletes', async () => {
      const created = await gw.admin('POST', '/v1/configs', { name: 'Prod routing', workspace_id: 'default', config: target(a) });
      expect(created.status).toBe(200);
      const { id, slug } = created.json as { id: string; slug: string };
      expect(slug).toBe('pc-prod-routing');

      const bySlug = await call(slug);
      expect(bySlug.status).toBe(200);
      expect(a.received).toHaveLength(1);

      const updated = await gw.admin('PUT', `/v1/configs/${slug}`, { config: target(b) });
      expect(updated.status).toBe(200);
      // Picked up at once locally.
      await call(id);
      expect(b.received).toHaveLength(1);

      const versions = await gw.admin('GET', `/v1/configs/${slug}/versions`);
      expect(versions.json.total).toBe(2);
      const got = await gw.admin('GET', `/v1/configs/${id}`);
      // Provider keys are answered masked (issue 13.2).
      expect(got.json).toMatchObject({ slug, version: 2, config: { ...target(b), api_key: '****' } });

      expect((await gw.admin('DELETE', `/v1/configs/${slug}`)).status).toBe(200);
      const gone = await call(slug);
      expect(gone.status).toBe(400);
      expect((await gw.admin('GET', `/v1/configs/${slug}`)).status).toBe(404);
    });

    it('stores provider keys encrypted, answers them masked, and the gateway still sends them', async () => {
      const secret = `sk-live-${mode}-0123456789abcdef`;
      const secondSecret = `sk-live-${mode}-fedcba9876543210`;
      const config = { strategy: { mode: 'fallback' }, targets: [target(a, { api_key: secret }), target(b, { api_key: secondSecret })] };
      const created = await gw.admin('POST', '/v1/configs', { name: 'Secret routing', workspace_id: 'default', config: { ...config, api_key: secret } });
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      const { id } = created.json as { id: string };
      const table = JSON.stringify(await (await import('../support/records.ts')).scanTable(gw.deps.repos.table));
      expect(table).not.toContain(secret);
      expect(table).not.toContain(secondSecret);

      const member = await gw.workspaceKey(['configs.read', 'configs.list', 'completions.write']);
      const answers = JSON.stringify([
        (await gw.admin('GET', `/v1/configs/${id}`, undefined, member)).json,
        (await gw.admin('GET', '/v1/configs?workspace_id=default', undefined, member)).json,
        (await gw.admin('GET', `/v1/configs/${id}/versions`, undefined, member)).json,
      ]);
      expect(answers).not.toContain(secret);
      expect(answers).not.toContain(secondSecret);
      const got = (await gw.admin('GET', `/v1/configs/${id}`)).json as { config: { api_key: string; targets: { api_key: string }[] } };
      expect([got.config.api_key, got.config.targets[0]?.api_key, got.config.targets[1]?.api_key]).toEqual(['****cdef', '****cdef', '****3210']);

      a.queue.push({ kind: 'error', status: 503, body: '{"error":{"message":"down"}}' });
      expect((await call(id)).status).toBe(200);
      expect([a.received[0]?.headers.authorization, b.received[0]?.headers.authorization]).toEqual([`Bearer ${secret}`, `Bearer ${secondSecret}`]);

      // Saving back what was read keeps the keys; a new key replaces one.
      const saved = await gw.admin('PUT', `/v1/configs/${id}`, {
        config: { ...got.config, targets: [{ ...got.config.targets[0], api_key: 'sk-new-key-00000000001' }, got.config.targets[1]] },
      });
      expect(saved.status, JSON.stringify(saved.json)).toBe(200);
      a.queue.push({ kind: 'error', status: 503, body: '{"error":{"message":"down"}}' });
      expect((await call(id)).status).toBe(200);
      expect([a.received[1]?.headers.authorization, b.received[1]?.headers.authorization]).toEqual(['Bearer sk-new-key-00000000001', `Bearer ${secondSecret}`]);
    });

    it('refuses an invalid saved config with AB01 naming config paths', async () => {
      const r = await gw.admin('POST', '/v1/configs', {
        name: 'bad',
        workspace_id: 'default',
        config: { strategy: { mode: 'loadbalance' }, targets: [target(a, { weight: 0 }), target(b, { weight: 0 })] },
      });
      expect(r.status).toBe(400);
      expect(r.json.errorCode).toBe('AB01');
      expect((r.json.errors as Array<{ path: string }>).map((e) => e.path)).toContain('config.targets');
    });
  });

  describe('API key defaults', () => {
    it('uses the key pinned config, refuses overrides when told to, and blocks deleting a pinned config', async () => {
      const made = await gw.admin('POST', '/v1/configs', { name: 'Pinned', workspace_id: 'default', config: target(c) });
      const slug = (made.json as { slug: string }).slug;
      const created = await gw.admin('POST', '/v1/api-keys/workspace/service', {
        name: 'pinned',
        workspace_id: 'default',
        scopes: ['completions.write'],
        defaults: { config_id: slug, allow_config_override: false, metadata: { team: 'search' } },
      });
      expect(created.status).toBe(200);
      const pinnedKey = (created.json as { key: string }).key;
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'x-gw-api-key': pinnedKey, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: MSG }),
      });
      expect(res.status).toBe(200);
      expect(c.received).toHaveLength(1);

      const override = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'x-gw-api-key': pinnedKey, 'content-type': 'application/json', 'x-gw-config': JSON.stringify(target(a)) },
        body: JSON.stringify({ model: 'm', messages: MSG }),
      });
      expect(override.status).toBe(403);
      expect(a.received).toHaveLength(0);

      const blocked = await gw.admin('DELETE', `/v1/configs/${slug}`);
      expect(blocked.status).toBe(409);
      expect(blocked.json.errorCode).toBe('AB07');

      const id = (created.json as { id: string }).id;
      expect((await gw.admin('PUT', `/v1/api-keys/${id}`, { defaults: null })).status).toBe(200);
      expect((await gw.admin('DELETE', `/v1/configs/${slug}`)).status).toBe(200);
    });

    it('routes on the key default metadata, request metadata winning', async () => {
      const created = await gw.admin('POST', '/v1/api-keys/workspace/service', {
        name: 'meta',
        workspace_id: 'default',
        scopes: ['completions.write'],
        defaults: { metadata: { tier: 'gold' } },
      });
      const metaKey = (created.json as { key: string }).key;
      const config = {
        strategy: { mode: 'conditional', conditions: [{ query: { 'metadata.tier': 'gold' }, then: 'gold' }], default: 'other' },
        targets: [target(a, { name: 'gold' }), target(b, { name: 'other' })],
      };
      const send = (headers: Record<string, string>) =>
        fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'x-gw-api-key': metaKey, 'content-type': 'application/json', 'x-gw-config': JSON.stringify(config), ...headers },
          body: JSON.stringify({ model: 'm', messages: MSG }),
        });
      expect((await send({})).headers.get('x-gw-last-used-option-index')).toBe('config.targets[0]');
      const overridden = await send({ 'x-gw-metadata': JSON.stringify({ tier: 'bronze' }) });
      expect(overridden.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
    });

    it('refuses a default config that does not exist, naming defaults.config_id', async () => {
      const r = await gw.admin('POST', '/v1/api-keys/workspace/service', {
        name: 'x',
        workspace_id: 'default',
        scopes: ['completions.write'],
        defaults: { config_id: 'pc-nope' },
      });
      expect(r.status).toBe(400);
      expect((r.json.errors as Array<{ path: string }>)[0]?.path).toBe('defaults.config_id');
    });
  });
});
