/**
 * The response cache end to end: simple (exact) and semantic caching through the local server,
 * namespaces, force refresh, streamed answers replayed as SSE, expiry with an injected clock.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';

describe.each(['direct', 'lambda'] as const)('response cache (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  const clock = new ManualClock(Date.UTC(2026, 6, 1));

  const chatCalls = () => mock.received.filter((r) => r.path.endsWith('/chat/completions')).length;

  async function call(config: unknown, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'content-type': 'application/json', 'x-gw-config': JSON.stringify(config), ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, cache: res.headers.get('x-gw-cache-status'), type: res.headers.get('content-type'), text: await res.text() };
  }

  const simple = () => ({ provider: 'openai', api_key: 'sk-x', custom_host: `${mock.url}/v1`, cache: { mode: 'simple', max_age: 60 } });
  const ask = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra });

  /** Cache writes in flight: an entry, then its vector (semantic), both after the answer ended. */
  const writes = new Set<Promise<unknown>>();
  function tracked<A extends unknown[]>(write: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
    return (...args) => {
      const p = write(...args);
      writes.add(p);
      void p.finally(() => writes.delete(p)).catch(() => undefined);
      return p;
    };
  }

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode, {}, { clock }), startMockOpenAI()]);
    key = await gw.workspaceKey();
    const { responseCache, vectorIndex } = gw.deps;
    responseCache.put = tracked(responseCache.put.bind(responseCache));
    vectorIndex.upsert = tracked(vectorIndex.upsert.bind(vectorIndex));
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.received.length = 0;
    mock.queue.length = 0;
  });

  /** Cache writes happen after the response: wait until every one started (and those they start) is done. */
  async function settle(): Promise<void> {
    while (writes.size > 0) {
      await Promise.allSettled([...writes]);
      // A vector is upserted once its entry is stored: let that start before looking again.
      await new Promise((r) => setImmediate(r));
    }
  }

  it('answers a repeated request from the cache, without calling the provider', async () => {
    const q = ask(`exact ${mode}`);
    const first = await call(simple(), q);
    expect(first.cache).toBe('MISS');
    await settle();
    const second = await call(simple(), q);
    expect(second.cache).toBe('HIT');
    expect(second.text).toBe(first.text);
    expect(chatCalls()).toBe(1);
  });

  it('an identical request right after the answer ended is a HIT, however slow the cache table write is', async () => {
    const doc = gw.deps.repos.table.doc as unknown as { send: (command: { constructor: { name: string } }) => Promise<unknown> };
    const send = doc.send.bind(doc);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    doc.send = (command) => (command.constructor.name === 'PutCommand' ? gate.then(() => send(command)) : send(command));
    try {
      for (const streamed of [false, true]) {
        const q = ask(`right after ${mode} ${streamed}`, streamed ? { stream: true } : {});
        const first = await call(simple(), q);
        expect(first.cache).toBe('MISS');
        const second = await call(simple(), q);
        expect([second.cache, second.text]).toEqual(['HIT', first.text]);
      }
      expect(chatCalls()).toBe(2);
    } finally {
      doc.send = send;
      release();
    }
  });

  it('ignores key order but not values, and partitions by namespace', async () => {
    const q = { messages: [{ role: 'user', content: `order ${mode}` }], model: 'gpt-4o-mini', temperature: 0 };
    await call(simple(), q);
    await settle();
    const reordered = await call(simple(), { temperature: 0, model: 'gpt-4o-mini', messages: q.messages });
    expect(reordered.cache).toBe('HIT');
    const changed = await call(simple(), { ...q, temperature: 1 });
    expect(changed.cache).toBe('MISS');
    const otherNamespace = await call(simple(), q, { 'x-gw-cache-namespace': 'team-b' });
    expect(otherNamespace.cache).toBe('MISS');
  });

  it('refreshes on x-gw-cache-force-refresh and never serves an expired entry', async () => {
    const q = ask(`refresh ${mode}`);
    await call(simple(), q);
    await settle();
    const refreshed = await call(simple(), q, { 'x-gw-cache-force-refresh': 'true' });
    expect(refreshed.cache).toBe('REFRESH');
    await settle();
    expect((await call(simple(), q)).cache).toBe('HIT');
    clock.advance(61_000);
    expect((await call(simple(), q)).cache).toBe('MISS');
    expect(chatCalls()).toBe(3);
  });

  it('caches a streamed answer and replays it as SSE ending in [DONE]', async () => {
    const q = ask(`stream ${mode}`, { stream: true });
    const first = await call(simple(), q);
    expect(first.cache).toBe('MISS');
    await settle();
    const second = await call(simple(), q);
    expect(second.cache).toBe('HIT');
    expect(second.type).toContain('text/event-stream');
    expect(second.text).toBe(first.text);
    expect(second.text.trim().endsWith('data: [DONE]')).toBe(true);
  });

  it('does not cache errors', async () => {
    const q = ask(`error ${mode}`);
    mock.queue.push({ kind: 'error', status: 500, body: '{"error":{"message":"boom"}}' });
    expect((await call(simple(), q)).status).toBe(500);
    await settle();
    const next = await call(simple(), q);
    expect(next.status).toBe(200);
    expect(next.cache).toBe('MISS');
  });

  it('reports DISABLED when the config has no cache', async () => {
    const r = await call({ provider: 'openai', api_key: 'sk-x', custom_host: `${mock.url}/v1` }, ask('no cache'));
    expect(r.cache).toBe('DISABLED');
  });

  describe('semantic', () => {
    const semantic = () => ({
      provider: 'openai',
      api_key: 'sk-x',
      custom_host: `${mock.url}/v1`,
      cache: { mode: 'semantic', max_age: 60, embedding: { provider: 'openai', model: 'text-embedding-3-small', custom_host: `${mock.url}/v1` } },
    });

    it('serves a near-identical question, and only for the same model and parameters', async () => {
      const first = await call(semantic(), ask(`What is the capital of France? ${mode}`));
      expect(first.cache).toBe('SEMANTIC MISS');
      await settle();
      const near = await call(semantic(), ask(`what is the capital of france ${mode.toUpperCase()}!`));
      expect(near.cache).toBe('SEMANTIC HIT');
      expect(near.text).toBe(first.text);
      const otherModel = await call(semantic(), { ...ask(`what is the capital of france ${mode}`), model: 'gpt-4o' });
      expect(otherModel.cache).toBe('SEMANTIC MISS');
      const unrelated = await call(semantic(), ask('Tell me a joke about cats and dogs'));
      expect(unrelated.cache).toBe('SEMANTIC MISS');
    });

    it('treats a failing embedding provider as a miss, not an error', async () => {
      const config = { ...semantic(), cache: { mode: 'semantic', embedding: { provider: 'openai', model: 'x', custom_host: 'http://127.0.0.1:1/v1' } } };
      const r = await call(config, ask(`embedding down ${mode}`));
      expect(r.status).toBe(200);
      expect(r.cache).toBe('SEMANTIC MISS');
    });
  });
});
