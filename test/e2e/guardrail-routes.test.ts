/**
 * Guardrails on every route a client can reach a model through, in both modes, against a
 * stand-in provider that is as lenient as a real one may be: it serves variants of the chat path
 * (trailing or repeated slashes, another case, percent-encoding, an encoded slash, a `;` suffix)
 * as chat. None of those variants gets past an input guardrail: the passthrough refuses them
 * before any provider is called. The assistants routes, file uploads of batch lines and any
 * other passthrough body run the input hooks on the text the provider will read, and a config
 * may deny the passthrough outright.
 */
import http from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGantry, ADMIN_KEY, type TestGantry } from '../support/gantry.ts';
import { startMockServer, type MockServer, type Recorded } from '../support/mock-http.ts';
import { multipart } from '../support/media.ts';

type Json = Record<string, unknown>;
const FORBIDDEN = 'glpat-0123';
const block = (words: string[]) => ({ 'default.contains': { operator: 'none', words }, deny: true });

/** The path as a lenient server reads it: decoded, any case, `;` parameters and empty segments dropped. */
function lenient(path: string): string {
  let p = path.split('?')[0] ?? '';
  for (let i = 0; i < 3; i++) p = decodeURIComponent(p);
  return `/${p
    .split(/[/\\]/)
    .map((s) => s.split(';')[0]!.toLowerCase())
    .filter((s) => s !== '')
    .join('/')}`;
}

function standIn(req: Recorded) {
  const path = lenient(req.path);
  if (req.method === 'POST' && path === '/v1/chat/completions') {
    return {
      json: {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }],
      },
    };
  }
  if (/^\/v1\/threads\/[^/]+\/messages$/.test(path)) return { json: { id: 'msg_1', object: 'thread.message' } };
  if (path === '/v1/files') return { json: { id: 'file-1', object: 'file', purpose: 'batch', filename: 'b.jsonl', bytes: 1 } };
  return { json: { ok: true, path } };
}

/** A request with exactly this path on the wire (fetch would keep most, but not all, variants). */
function rawRequest(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | Uint8Array,
): Promise<{ status: number; json: Json }> {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          let json: Json = {};
          try {
            json = JSON.parse(text) as Json;
          } catch {
            json = { text };
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const chat = (content: string) => JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });

/** A batch input line. */
const line = (id: string, content: string) =>
  JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] } });

const CHAT_VARIANTS = [
  '/v1/chat/completions/',
  '/v1//chat/completions',
  '/v1/chat//completions',
  '/v1/Chat/Completions',
  '/v1/CHAT/COMPLETIONS/',
  '/v1/chat/%63ompletions',
  '/v1/%43hat/completions',
  '/v1/chat%2Fcompletions',
  '/v1/chat%2fcompletions/',
  '/v1/chat/%2563ompletions',
  '/v1/chat/completions;x=1',
  '/v1/chat/completions/?x=1',
];

/** Variants the router itself reads as the chat path. */
const SERVED: ReadonlySet<string> = new Set(['/v1/chat/%63ompletions']);

describe.each(['direct', 'lambda'] as const)('guardrails on route variants, assistants, files and the passthrough (%s mode)', (mode) => {
  let gw: TestGantry;
  let provider: MockServer;
  let key: string;

  const target = (extra: Json = {}) => ({ provider: 'openai', api_key: 'sk-x', custom_host: `${provider.url}/v1`, ...extra });
  const guarded = () => target({ input_guardrails: [block([FORBIDDEN])] });
  const headers = (config: Json = guarded(), extra: Record<string, string> = {}) => ({
    'x-gw-api-key': key,
    'x-gw-config': JSON.stringify(config),
    'content-type': 'application/json',
    ...extra,
  });
  const send = (method: string, path: string, body?: string | Uint8Array, h: Record<string, string> = headers()) => rawRequest(gw.url, method, path, h, body);

  beforeAll(async () => {
    [gw, provider] = await Promise.all([startGantry(mode), startMockServer(standIn)]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), provider?.close()]);
  });
  beforeEach(() => {
    provider.received.length = 0;
    provider.queue.length = 0;
  });

  it('the stand-in provider serves every variant of the chat path as chat', async () => {
    for (const path of CHAT_VARIANTS) {
      const res = await rawRequest(provider.url, 'POST', path, { 'content-type': 'application/json' }, chat('hi'));
      expect([path, res.json.object]).toEqual([path, 'chat.completion']);
    }
  });

  it('the canonical chat path denies forbidden text and serves the rest', async () => {
    expect((await send('POST', '/v1/chat/completions', chat(`my token ${FORBIDDEN}`))).status).toBe(446);
    expect(provider.received).toHaveLength(0);
    expect((await send('POST', '/v1/chat/completions', chat('hello'))).status).toBe(200);
    expect(provider.received).toHaveLength(1);
  });

  it.each(CHAT_VARIANTS)('%s never takes forbidden text to the provider', async (path) => {
    const denied = await send('POST', path, chat(`my token ${FORBIDDEN}`));
    expect([446, 400]).toContain(denied.status);
    expect(provider.received).toHaveLength(0);
    const clean = await send('POST', path, chat('hello'));
    if (SERVED.has(path)) {
      // Percent-encoded letters are decoded by the router: the chat endpoint serves them, hooks and all.
      expect(denied.status).toBe(446);
      expect(clean.status).toBe(200);
      expect(provider.received.map((r) => r.path)).toEqual(['/v1/chat/completions']);
      return;
    }
    expect(clean.status).toBe(400);
    expect(clean.json.error).toMatchObject({ type: 'invalid_request_error', param: 'path', code: 'non_canonical_path' });
    expect((clean.json.error as { message: string }).message).toContain('POST /v1/chat/completions');
    expect(provider.received).toHaveLength(0);
  });

  it('refuses variants of the other unified routes too, and of /v1/models and /v1/realtime', async () => {
    const cases: Array<[string, string, string]> = [
      ['POST', '/v1/Embeddings', '/v1/embeddings'],
      ['POST', '/v1/responses/', '/v1/responses'],
      ['POST', '/v1/threads/thread_1/Messages', '/v1/threads/thread_1/messages'],
      ['POST', '/v1/files/', '/v1/files'],
      ['GET', '/v1//models', '/v1/models'],
      ['GET', '/v1/Realtime', '/v1/realtime'],
      ['GET', '/v1/files/file-abc/Content', '/v1/files/file-abc/content'],
    ];
    for (const [method, path, canonical] of cases) {
      const res = await send(method, path, method === 'POST' ? '{"input":"x"}' : undefined);
      expect([path, res.status, (res.json.error as { message?: string } | undefined)?.message]).toEqual([path, 400, expect.stringContaining(canonical)]);
    }
    expect(provider.received).toHaveLength(0);
  });

  it('leaves real passthrough paths, Gemini-style ones and admin routes alone', async () => {
    const ok = await send('POST', '/v1/vector_stores/vs_1/search', '{"query":"refund policy"}');
    expect(ok.status).toBe(200);
    expect(provider.received.at(-1)?.path).toBe('/v1/vector_stores/vs_1/search');
    const gemini = await send('POST', '/v1/models/gemini-2.0-flash:generateContent', JSON.stringify({ contents: [{ parts: [{ text: 'hello' }] }] }));
    expect(gemini.status).toBe(200);
    expect(provider.received.at(-1)?.path).toBe('/v1/models/gemini-2.0-flash:generateContent');
    // A GET on a path a unified route serves only for POST (OpenAI's stored completions) stays the provider's.
    expect((await send('GET', '/v1/chat/completions?limit=2')).status).toBe(200);
    expect(provider.received.at(-1)).toMatchObject({ method: 'GET', path: '/v1/chat/completions?limit=2' });
    const admin = await rawRequest(gw.url, 'GET', '/v1/api-keys', { 'x-gw-api-key': ADMIN_KEY });
    expect([admin.status, admin.json.object]).toEqual([200, 'list']);
    expect(provider.received).toHaveLength(3);
  });

  it('runs the input hooks on any passthrough JSON body, every string at any depth', async () => {
    const nested = JSON.stringify({ query: 'ok', filters: [{ note: { deep: ['fine', `leak ${FORBIDDEN}`] } }] });
    const denied = await send('POST', '/v1/vector_stores/vs_1/search', nested);
    expect(denied.status).toBe(446);
    expect(denied.json.error).toMatchObject({ type: 'hooks_failed' });
    const gemini = await send(
      'POST',
      '/v1/models/gemini-2.0-flash:generateContent',
      JSON.stringify({ contents: [{ role: 'user', parts: [{ text: FORBIDDEN }] }] }),
    );
    expect(gemini.status).toBe(446);
    // A body the gateway does not parse as JSON is read as the text it is.
    const plain = await send('POST', '/v1/custom/run', `{"prompt": "${FORBIDDEN}"}`, headers(guarded(), { 'content-type': 'text/plain' }));
    expect(plain.status).toBe(446);
    // JSON escapes do not hide it either.
    const escaped = await send('POST', '/v1/custom/run', '{"prompt": "\\u0067lpat-0123"}');
    expect(escaped.status).toBe(446);
    expect(provider.received).toHaveLength(0);
  });

  it('runs the input hooks on assistants messages, thread creation, runs and tool outputs', async () => {
    const beta = headers(guarded(), { 'openai-beta': 'assistants=v2' });
    const bodies: Array<[string, Json]> = [
      ['/v1/threads/thread_1/messages', { role: 'user', content: `here ${FORBIDDEN}` }],
      ['/v1/threads/thread_1/messages', { role: 'user', content: [{ type: 'text', text: FORBIDDEN }] }],
      [
        '/v1/threads',
        {
          messages: [
            { role: 'user', content: 'fine' },
            { role: 'assistant', content: FORBIDDEN },
          ],
        },
      ],
      ['/v1/threads/runs', { assistant_id: 'asst_1', thread: { messages: [{ role: 'user', content: FORBIDDEN }] } }],
      ['/v1/threads/thread_1/runs', { assistant_id: 'asst_1', additional_instructions: FORBIDDEN }],
      ['/v1/threads/thread_1/runs', { assistant_id: 'asst_1', additional_messages: [{ role: 'user', content: FORBIDDEN }] }],
      ['/v1/threads/thread_1/runs/run_1/submit_tool_outputs', { tool_outputs: [{ tool_call_id: 'c1', output: FORBIDDEN }] }],
      ['/v1/assistants', { model: 'gpt-4o', instructions: FORBIDDEN }],
    ];
    for (const [path, body] of bodies) {
      const res = await send('POST', path, JSON.stringify(body), beta);
      expect([path, res.status, res.json.error]).toEqual([path, 446, expect.objectContaining({ type: 'hooks_failed' })]);
    }
    expect(provider.received).toHaveLength(0);

    const ok = await send('POST', '/v1/threads/thread_1/messages', JSON.stringify({ role: 'user', content: 'hello' }), beta);
    expect(ok.status).toBe(200);
    expect(provider.received).toHaveLength(1);
    // Reads carry no text: they are not held by hooks that need some.
    const need = target({ input_guardrails: [{ 'default.contains': { operator: 'any', words: ['please'] }, deny: true }] });
    expect((await send('GET', '/v1/threads/thread_1/messages', undefined, headers(need, { 'openai-beta': 'assistants=v2' }))).status).toBe(200);
  });

  it('checks the lines of a batch file uploaded to the provider of a pinned config, and answers 446 before the upload', async () => {
    const made = await gw.admin('POST', '/v1/configs', { name: `Guarded files ${mode}`, workspace_id: 'default', config: guarded() });
    expect(made.status).toBe(200);
    const created = await gw.admin('POST', '/v1/api-keys/workspace/service', {
      name: 'pinned',
      workspace_id: 'default',
      scopes: ['completions.write'],
      defaults: { config_id: made.json.slug },
    });
    const pinned = created.json.key as string;
    const upload = (lines: string[], purpose = 'batch') => {
      const form = multipart([
        { name: 'purpose', value: purpose },
        { name: 'file', value: Buffer.from(`${lines.join('\r\n')}\n`), filename: 'batch.jsonl', type: 'application/jsonl' },
      ]);
      return send('POST', '/v1/files', form.body, { authorization: `Bearer ${pinned}`, 'content-type': form.contentType });
    };
    const denied = await upload([line('a', 'hello'), line('b', `token ${FORBIDDEN}`)]);
    expect(denied.status).toBe(446);
    expect(denied.json.error).toMatchObject({ type: 'hooks_failed' });
    const escaped = await upload([line('a', 'hello').replace('hello', '\\u0067lpat-0123')]);
    expect(escaped.status).toBe(446);
    expect(provider.received).toHaveLength(0);

    const ok = await upload([line('a', 'hello'), line('b', 'world')]);
    expect(ok.status).toBe(200);
    expect(provider.received.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/files']);
    // Other files are not batch requests: not held by the hooks.
    expect((await upload(['{"messages": []}'], 'fine-tune')).status).toBe(200);
  });

  it('denies the passthrough outright for a config that says so, naming the setting; chat still runs', async () => {
    const denyAll = { passthrough: 'deny', ...guarded() };
    const res = await send('POST', '/v1/vector_stores/vs_1/search', '{"query":"x"}', headers(denyAll));
    expect(res.status).toBe(403);
    expect(res.json.error).toMatchObject({ type: 'permission_error', param: 'config.passthrough', code: 'passthrough_denied' });
    const inherited = { passthrough: 'deny', strategy: { mode: 'fallback' }, targets: [target(), target()] };
    const nested = await send('GET', '/v1/vector_stores', undefined, headers(inherited));
    expect([nested.status, (nested.json.error as Json).param]).toEqual([403, 'config.targets[0].passthrough']);
    const allowed = { strategy: { mode: 'fallback' }, targets: [target({ passthrough: 'allow' })], passthrough: 'deny' };
    expect((await send('GET', '/v1/vector_stores', undefined, headers(allowed))).status).toBe(200);
    expect(provider.received).toHaveLength(1);
    expect((await send('POST', '/v1/chat/completions', chat('hello'), headers(denyAll))).status).toBe(200);
    expect(provider.received).toHaveLength(2);
  });

  it('validates the passthrough setting with a 400 naming its path', async () => {
    const res = await send(
      'POST',
      '/v1/chat/completions',
      chat('hello'),
      headers({ strategy: { mode: 'single' }, targets: [target({ passthrough: 'block' })] }),
    );
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ param: 'x-gw-config' });
    expect((res.json.error as { message: string }).message).toContain('targets[0].passthrough: must be one of allow, deny');
    expect(provider.received).toHaveLength(0);
  });
});
