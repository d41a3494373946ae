/**
 * What every gateway answer tells the client and what its log says, in both modes: the log id
 * header that opens the request's log, the same cache status in header and log (DISABLED
 * included), the model priced when override_params replaced the client's (and an unpriced model
 * flagged), and a pinned config that refuses every routing header that would override it.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { costMicrosOf, formatUsd } from '../../layers/core/src/pricing/cost.ts';
import { findModel } from '../../layers/core/src/pricing/catalog.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { settleLogs, waitFor } from '../support/observability.ts';

type Json = Record<string, unknown>;
const MSG = [{ role: 'user', content: 'Hi' }];
/** What the mock reports for every completion. */
const USAGE = { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 };

describe.each(['direct', 'lambda'] as const)('gateway answers (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;

  const target = (extra: Json = {}) => ({ provider: 'openai', api_key: 'sk-x', custom_host: `${mock.url}/v1`, ...extra });
  const chat = (headers: Record<string, string>, body: Json = {}, apiKey = key) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gw-api-key': apiKey, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: MSG, ...body }),
    });
  const withConfig = (config: Json, body: Json = {}) => chat({ 'x-gw-config': JSON.stringify(config) }, body);
  const logById = async (id: string): Promise<Json> =>
    waitFor(gw.deps, async () => {
      const r = await gw.admin('GET', `/v1/logs/${id}`);
      return r.status === 200 ? r.json : undefined;
    });
  const priceOf = (model: string): string => {
    const price = findModel('openai', model)?.price;
    const micros = price ? costMicrosOf(price, USAGE) : undefined;
    if (!micros) throw new Error(`${model} has no catalog price`);
    return formatUsd(micros);
  };

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.received.length = 0;
    mock.queue.length = 0;
  });

  describe('x-gw-log-id', () => {
    it('names the log of an answered request and of a refused one', async () => {
      const res = await withConfig(target());
      expect(res.status).toBe(200);
      const id = res.headers.get('x-gw-log-id');
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      const log = await logById(String(id));
      expect(log.id).toBe(id);
      expect(log.trace_id).toBe(res.headers.get('x-gw-trace-id'));

      const refused = await withConfig(target(), { temperature: 7 });
      expect(refused.status).toBe(400);
      const refusedId = String(refused.headers.get('x-gw-log-id'));
      expect(refusedId).not.toBe(id);
      expect((await logById(refusedId)).status_code).toBe(400);
    });
  });

  describe('cache_status', () => {
    it('is the header value in the log, DISABLED, MISS and HIT alike', async () => {
      const cached = target({ cache: { mode: 'simple', max_age: 60 } });
      const answers = [await withConfig(target()), await withConfig(cached, { seed: 7 })];
      // The cache entry is written once the answer has ended, off the request path.
      await settleLogs(gw.deps);
      await new Promise((r) => setTimeout(r, 150));
      answers.push(await withConfig(cached, { seed: 7 }));
      const statuses = answers.map((r) => r.headers.get('x-gw-cache-status'));
      expect(statuses).toEqual(['DISABLED', 'MISS', 'HIT']);
      for (const [i, res] of answers.entries()) {
        expect((await logById(String(res.headers.get('x-gw-log-id')))).cache_status).toBe(statuses[i]);
      }
    });
  });

  describe('the model priced', () => {
    it('is the one override_params sent when the provider answers with a model that has no price', async () => {
      mock.queue.push({ kind: 'ok', answerModel: 'gpt-4o-2099-01-01-preview' });
      const res = await withConfig(target({ override_params: { model: 'gpt-4o' } }));
      expect(res.status).toBe(200);
      expect(JSON.parse(mock.received[0]?.body ?? '{}').model).toBe('gpt-4o');
      expect(res.headers.get('x-gw-cost')).toBe(priceOf('gpt-4o'));
      expect(priceOf('gpt-4o')).not.toBe(priceOf('gpt-4o-mini'));
    });

    it('is the one the provider answered with', async () => {
      const res = await withConfig(target({ override_params: { model: 'gpt-4o' } }));
      expect(res.headers.get('x-gw-cost')).toBe(priceOf('gpt-4o'));
      const log = await logById(String(res.headers.get('x-gw-log-id')));
      expect(log.model).toBe('gpt-4o');
      expect(log.cost_unpriced).toBeUndefined();
    });

    it('costs nothing and is flagged in the log when it has no price, never the client model', async () => {
      const res = await withConfig(target({ override_params: { model: 'house-model-without-price' } }));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gw-cost')).toBeNull();
      const log = await logById(String(res.headers.get('x-gw-log-id')));
      expect(log).toMatchObject({ model: 'house-model-without-price', cost_micros: 0, cost_unpriced: true, total_tokens: USAGE.total_tokens });
    });
  });

  describe('a key whose pinned config forbids overrides', () => {
    let pinned: string;
    beforeAll(async () => {
      const made = await gw.admin('POST', '/v1/configs', { name: 'Pinned answers', workspace_id: 'default', config: target() });
      expect(made.status).toBe(200);
      const created = await gw.admin('POST', '/v1/api-keys/workspace/service', {
        name: 'pinned answers',
        workspace_id: 'default',
        scopes: ['completions.write'],
        defaults: { config_id: (made.json as { slug: string }).slug, allow_config_override: false },
      });
      expect(created.status).toBe(200);
      pinned = (created.json as { key: string }).key;
    });

    it.each([
      ['x-gw-config', JSON.stringify({ provider: 'groq' })],
      ['x-gw-provider', 'groq'],
      ['x-gw-custom-host', 'https://elsewhere.example.com/v1'],
      ['x-gw-virtual-key', 'some-vk'],
    ])('refuses %s with 403 naming it', async (header, value) => {
      const res = await chat({ [header]: value }, {}, pinned);
      expect(res.status).toBe(403);
      const body = (await res.json()) as { error: { param: string; message: string } };
      expect(body.error.param).toBe(header);
      expect(body.error.message).toContain(header);
      expect(mock.received).toHaveLength(0);
    });

    it('still answers without them', async () => {
      expect((await chat({}, {}, pinned)).status).toBe(200);
      expect(mock.received).toHaveLength(1);
    });
  });
});
