/**
 * The passthrough end to end through the local server in both modes: any other /v1 path reaches
 * the provider with its method, query, body bytes and headers (never an x-gw-* one or the gateway
 * key), and the provider's answer comes back exactly: status, content type, body bytes (hashed),
 * streaming, errors unwrapped. Same authentication, routing, SSRF checks and record as every route,
 * and it never shadows admin routes or /v1/health.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayHook, GatewayRecord } from '../../layers/core/src/kernel/lifecycle.ts';
import { sha256, startMockOpenAIApi, type MockOpenAIApi } from '../support/mock-openai-api.ts';
import { makePng, multipart } from '../support/media.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { until } from '../support/until.ts';

describe.each(['direct', 'lambda'] as const)('passthrough (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAIApi;
  let other: MockOpenAIApi;
  let key: string;
  const records: GatewayRecord[] = [];
  const hook: GatewayHook = { name: 'recorder', complete: (r) => void records.push(r) };

  const send = (method: string, path: string, opts: { body?: BodyInit; headers?: Record<string, string> } = {}) =>
    fetch(`${gw.url}${path}`, {
      method,
      headers: { 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1`, authorization: 'Bearer sk-provider', ...opts.headers },
      ...(opts.body !== undefined ? { body: opts.body } : {}),
    });
  const bytesOf = async (res: Response) => Buffer.from(await res.arrayBuffer());
  const last = () => mock.received.at(-1)!;
  const noGatewayHeaders = (headers: Record<string, unknown>) => {
    expect(Object.keys(headers).filter((h) => h.startsWith('x-gw-'))).toEqual([]);
    expect(JSON.stringify(headers)).not.toContain(key);
  };

  beforeAll(async () => {
    [gw, mock, other] = await Promise.all([startGantry(mode), startMockOpenAIApi(), startMockOpenAIApi()]);
    key = await gw.workspaceKey();
    gw.deps.gatewayHooks.push(hook);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close(), other?.close()]);
  });
  beforeEach(() => {
    mock.reset();
    other.reset();
    records.length = 0;
  });

  it('POST JSON: path, query, body and provider headers reach the provider; the answer comes back byte for byte', async () => {
    const body = JSON.stringify({ model: 'x', nested: { keep: [1, 2, 3] }, weird: '\u00e9\u4e2d' });
    const res = await send('POST', '/v1/vector_stores/vs_1/search?limit=3&filter=a%20b&tag=1&tag=2', {
      body,
      headers: {
        'content-type': 'application/json',
        'x-custom-header': 'kept',
        'openai-organization': 'org-1',
        'x-gw-metadata': '{"a":"b"}',
        'x-gw-trace-id': 'trace-pt',
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-echo-method')).toBe('POST');
    expect(res.headers.get('x-gw-trace-id')).toBe('trace-pt');
    expect(res.headers.get('x-gw-provider')).toBe('openai');
    expect((await bytesOf(res)).toString('utf8')).toBe(body);

    const got = last();
    expect(got.method).toBe('POST');
    expect(got.path).toBe('/v1/vector_stores/vs_1/search');
    expect([...got.query]).toEqual([
      ['limit', '3'],
      ['filter', 'a b'],
      ['tag', '1'],
      ['tag', '2'],
    ]);
    if (mode === 'direct') expect(got.url).toBe('/v1/vector_stores/vs_1/search?limit=3&filter=a%20b&tag=1&tag=2');
    expect(got.body.toString('utf8')).toBe(body);
    expect(got.headers).toMatchObject({ authorization: 'Bearer sk-provider', 'x-custom-header': 'kept', 'openai-organization': 'org-1' });
    noGatewayHeaders(got.headers);

    await until(() => records[0], 'the request record');
    expect(records[0]).toMatchObject({ endpoint: 'proxy', method: 'POST', path: '/v1/vector_stores/vs_1/search', status: 200, provider: 'openai', model: 'x' });
  });

  it('POST multipart: the exact bytes and boundary reach the provider and come back', async () => {
    const png = makePng(8, 8);
    const { body, contentType } = multipart([
      { name: 'purpose', value: 'vision' },
      { name: 'file', value: png, filename: 'p.png', type: 'image/png' },
    ]);
    const res = await send('POST', '/v1/uploads/up_1/parts', { body, headers: { 'content-type': contentType } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(contentType);
    expect(sha256(await bytesOf(res))).toBe(sha256(body));
    expect(last().headers['content-type']).toBe(contentType);
    expect(sha256(last().body)).toBe(sha256(body));
    expect(last().form?.files.file?.sha256).toBe(sha256(png));
  });

  it('PUT binary and PATCH: bytes unchanged both ways', async () => {
    const blob = new Uint8Array(randomBytes(50_000));
    const put = await send('PUT', '/v1/containers/c_1/files/raw', { body: blob, headers: { 'content-type': 'application/octet-stream' } });
    expect(put.status).toBe(200);
    expect(put.headers.get('content-type')).toBe('application/octet-stream');
    expect(sha256(await bytesOf(put))).toBe(sha256(blob));
    expect(last()).toMatchObject({ method: 'PUT', path: '/v1/containers/c_1/files/raw' });
    expect(sha256(last().body)).toBe(sha256(blob));

    const patch = await send('PATCH', '/v1/things/1', { body: '{"a":1}', headers: { 'content-type': 'application/merge-patch+json' } });
    expect(patch.headers.get('x-echo-method')).toBe('PATCH');
    expect(await patch.text()).toBe('{"a":1}');
  });

  it("GET a binary stream sent in chunks, with the provider's status, type and headers", async () => {
    const chunks = [randomBytes(1000), randomBytes(70_000), randomBytes(10)];
    mock.raw.set('GET /v1/containers/c_1/files/f_1/content', {
      status: 203,
      headers: { 'content-type': 'image/png', 'x-provider-thing': 'yes', 'set-cookie': ['a=1', 'b=2'] },
      body: chunks,
    });
    const res = await send('GET', '/v1/containers/c_1/files/f_1/content');
    expect(res.status).toBe(203);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.headers.get('x-provider-thing')).toBe('yes');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(sha256(await bytesOf(res))).toBe(sha256(Buffer.concat(chunks)));
    expect(last().method).toBe('GET');
    expect(last().body.length).toBe(0);
  });

  it("DELETE: the provider's status and body as they are", async () => {
    mock.raw.set('DELETE /v1/vector_stores/vs_9', { status: 202, headers: { 'content-type': 'application/json' }, body: '{"id":"vs_9","deleted":true}' });
    const res = await send('DELETE', '/v1/vector_stores/vs_9');
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('{"id":"vs_9","deleted":true}');
    expect(last().method).toBe('DELETE');
  });

  it('returns provider errors exactly, HTML included, never wrapped', async () => {
    const html = '<html><body><h1>418 I am a teapot</h1></body></html>';
    mock.raw.set('GET /v1/teapot', { status: 418, headers: { 'content-type': 'text/html; charset=utf-8' }, body: html });
    const res = await send('GET', '/v1/teapot');
    expect(res.status).toBe(418);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await res.text()).toBe(html);

    mock.raw.set('POST /v1/bad', { status: 422, headers: { 'content-type': 'application/json' }, body: '{"detail":"nope"}' });
    const json = await send('POST', '/v1/bad', { body: '{}', headers: { 'content-type': 'application/json' } });
    expect(json.status).toBe(422);
    expect(await json.text()).toBe('{"detail":"nope"}');
  });

  it('streams server-sent events as they come', async () => {
    const events = ['data: {"n":1}\n\n', 'data: {"n":2}\n\n', 'data: [DONE]\n\n'].map((e) => Buffer.from(e));
    mock.raw.set('POST /v1/custom/stream', { status: 200, headers: { 'content-type': 'text/event-stream' }, body: events });
    const res = await send('POST', '/v1/custom/stream', { body: '{"stream":true}', headers: { 'content-type': 'application/json' } });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(await res.text()).toBe(Buffer.concat(events).toString());
  });

  it('routes by config: provider, host and key from the config, fallback included', async () => {
    mock.raw.set('GET /v1/custom/thing', { status: 503, headers: { 'content-type': 'application/json' }, body: '{"error":{"message":"down"}}' });
    const config = {
      strategy: { mode: 'fallback' },
      targets: [
        { provider: 'openai', api_key: 'sk-a', custom_host: `${mock.url}/v1` },
        { provider: 'openai', api_key: 'sk-b', custom_host: `${other.url}/v1` },
      ],
    };
    const res = await fetch(`${gw.url}/v1/custom/thing?q=1`, {
      headers: { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config), authorization: 'Bearer sk-client' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
    expect(mock.received[0]?.headers.authorization).toBe('Bearer sk-a');
    expect(other.received[0]).toMatchObject({ path: '/v1/custom/thing' });
    expect(other.received[0]?.query.get('q')).toBe('1');
    expect(other.received[0]?.headers.authorization).toBe('Bearer sk-b');
  });

  it('authenticates like every route, and checks custom hosts (SSRF)', async () => {
    const anonymous = await fetch(`${gw.url}/v1/anything`, { method: 'POST', headers: { 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1` } });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: { type: 'authentication_error' } });

    const readOnly = await gw.workspaceKey(['api_keys.list']);
    expect((await send('GET', '/v1/anything', { headers: { 'x-gw-api-key': readOnly } })).status).toBe(403);

    const metadata = await send('GET', '/v1/anything', { headers: { 'x-gw-custom-host': 'http://169.254.169.254/v1' } });
    expect(metadata.status).toBe(400);
    expect(await metadata.json()).toMatchObject({ error: { param: 'x-gw-custom-host' } });
    expect(mock.received).toHaveLength(0);
  });

  it("never reaches the service's own ports (its listener, DynamoDB Local) even on a trusted host; says how to allow a private one", async () => {
    const ddbPort = new URL(String(gw.deps.config.dynamodbEndpoint)).port;
    for (const host of [`http://127.0.0.1:${ddbPort}`, `http://localhost:${ddbPort}`, `http://127.0.0.1:${gw.server.port}/v1`]) {
      const res = await send('POST', '/v1/anything', {
        headers: { 'x-gw-custom-host': host, 'x-amz-target': 'DynamoDB_20120810.ListTables', 'content-type': 'application/x-amz-json-1.0' },
        body: '{}',
      });
      const body = (await res.json()) as { error: { param: string; message: string } };
      expect([res.status, body.error.param], host).toEqual([400, 'x-gw-custom-host']);
      expect(body.error.message).toContain("this service's own ports");
    }
    const untrusted = await send('GET', '/v1/anything', { headers: { 'x-gw-custom-host': 'http://10.0.0.5:11434/v1' } });
    expect(((await untrusted.json()) as { error: { message: string } }).error.message).toContain('add "10.0.0.5:11434" to GW_TRUSTED_CUSTOM_HOSTS');
    expect(mock.received).toHaveLength(0);
  });

  it('refuses paths that climb out of the provider base', async () => {
    const res = await send('GET', '/v1/files%2F..%2F..%2Fadmin');
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { param: 'path' } });
    expect(mock.received).toHaveLength(0);
  });

  it('never shadows admin routes or /v1/health', async () => {
    const admin = await fetch(`${gw.url}/v1/api-keys`, { headers: { 'x-gw-api-key': ADMIN_KEY } });
    expect(admin.status).toBe(200);
    expect(await admin.json()).toMatchObject({ object: 'list' });
    const unknownAdmin = await fetch(`${gw.url}/v1/api-keys/x/y/z`, { method: 'PATCH', headers: { 'x-gw-api-key': ADMIN_KEY } });
    expect(unknownAdmin.status).toBe(404);
    expect(await unknownAdmin.json()).toMatchObject({ object: 'error', errorCode: 'AB02' });
    expect((await fetch(`${gw.url}/v1/health`)).status).toBe(200);
    expect(mock.received).toHaveLength(0);
  });
});
