/**
 * The openai SDK's realtime client (`OpenAIRealtimeWS`), which always opens wss://, through a local
 * Gantry to the mock realtime provider: over TLS (GW_TLS_CERT, GW_TLS_KEY, a self-signed
 * certificate made with openssl) and over plain HTTP (the `createConnection` option the SDK hands
 * to `ws`). The code is docs/realtime.md's, from test/docs/examples/realtime-openai-sdk.ts; the page's
 * blocks are checked to be that file's, word for word.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../layers/core/src/config.ts';
import { startLocalServer } from '../../lambdas/local/server.ts';
import { ask, connectOverHttp, connectOverTls } from '../docs/examples/realtime-openai-sdk.ts';
import { codeBlocks, read } from '../docs/markdown.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockRealtime, type MockRealtime } from '../support/mock-realtime.ts';

const EXAMPLES = 'test/docs/examples/realtime-openai-sdk.ts';
const PROVIDER_KEY = 'sk-my-openai-0123456789';

/** A self-signed certificate for localhost and 127.0.0.1, as docs/realtime.md makes it. */
function selfSigned(dir: string): { cert: string; key: string } {
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

/** The managed provider `@my-openai` the examples name, whose integration points at the mock. */
async function myOpenAI(gw: TestGantry, mock: MockRealtime): Promise<void> {
  const integration = await gw.admin('POST', '/v1/integrations', {
    name: 'My OpenAI',
    slug: 'my-openai',
    ai_provider_id: 'openai',
    key: PROVIDER_KEY,
    configurations: { custom_host: `${mock.url}/v1` },
  });
  expect(integration.status, JSON.stringify(integration.json)).toBe(200);
  const provider = await gw.admin('POST', '/v1/providers', { name: 'My OpenAI', slug: 'my-openai', integration_id: 'my-openai', workspace_id: 'default' });
  expect(provider.status, JSON.stringify(provider.json)).toBe(200);
}

describe('the openai SDK realtime client through Gantry', () => {
  let dir: string;
  let tls: { cert: string; key: string };
  let mock: MockRealtime;
  let secure: TestGantry;
  let plain: TestGantry;
  let key: string;
  let plainKey: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gantry-tls-'));
    tls = selfSigned(dir);
    mock = await startMockRealtime();
    // The harness's admin calls (fetch) trust the certificate while setting up; the tests trust it only where they say so.
    const trusted = getCACertificates('default');
    setDefaultCACertificates([...trusted, readFileSync(tls.cert, 'utf8')]);
    try {
      [secure, plain] = await Promise.all([startGantry('direct', { GW_TLS_CERT: tls.cert, GW_TLS_KEY: tls.key }), startGantry('direct')]);
      await Promise.all([myOpenAI(secure, mock), myOpenAI(plain, mock)]);
      [key, plainKey] = await Promise.all([secure.workspaceKey(), plain.workspaceKey()]);
    } finally {
      setDefaultCACertificates(trusted);
    }
  });
  afterAll(async () => {
    await Promise.all([secure?.close(), plain?.close(), mock?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  /** What the provider received on the last session, and with which key. */
  const lastSession = () => {
    const conn = mock.connections.at(-1)!;
    return {
      url: conn.url,
      authorization: conn.headers.authorization,
      gwHeaders: Object.keys(conn.headers).filter((h) => h.startsWith('x-gw-')),
      types: conn.events.map((e) => e.type),
    };
  };

  it('connects over wss:// to a Gantry serving TLS, with the gateway key as the SDK API key and a managed provider header', async () => {
    expect(secure.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const rt = await connectOverTls(`${secure.url}/v1`, key, tls.cert);
    expect(rt.url.protocol).toBe('wss:');
    const events: string[] = [];
    rt.on('event', (e) => events.push(e.type));
    expect(await ask(rt, 'Hello')).toBe('01');
    expect(events).toEqual([
      'session.created',
      'session.updated',
      'response.created',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.done',
    ]);
    expect(lastSession()).toEqual({
      url: '/v1/realtime?model=gpt-realtime',
      authorization: `Bearer ${PROVIDER_KEY}`,
      gwHeaders: [],
      types: ['session.update', 'conversation.item.create', 'response.create'],
    });
    rt.close();
  });

  it('is real TLS: a client that does not trust the certificate is refused, and HTTP requests are served over https', async () => {
    const untrusting = await OpenAIRealtimeWS.create(new OpenAI({ baseURL: `${secure.url}/v1`, apiKey: key }), { model: 'gpt-realtime' });
    const error = await new Promise<Error>((resolve) => untrusting.on('error', resolve));
    expect(String((error.cause as Error | undefined)?.message ?? error.message)).toMatch(/self[- ]signed certificate/);

    const health = await new Promise<number>((resolve, reject) => {
      https.get(`${secure.url}/v1/health`, { ca: readFileSync(tls.cert) }, (res) => resolve(res.resume().statusCode ?? 0)).on('error', reject);
    });
    expect(health).toBe(200);
  });

  it('connects to a plain-HTTP Gantry (npm start) with the createConnection option', async () => {
    expect(plain.url).toMatch(/^http:\/\//);
    const rt = await connectOverHttp(`${plain.url}/v1`, plainKey);
    expect(rt.url.protocol).toBe('wss:');
    expect(await ask(rt, 'Hello')).toBe('01');
    expect(lastSession()).toMatchObject({
      authorization: `Bearer ${PROVIDER_KEY}`,
      gwHeaders: [],
      types: ['session.update', 'conversation.item.create', 'response.create'],
    });
    rt.close();
  });

  it("docs/realtime.md's SDK blocks are the code these tests run", () => {
    const blocks = codeBlocks(read('docs/realtime.md')).filter((b) => b.before === `<!-- from: ${EXAMPLES} -->`);
    expect(blocks.map((b) => b.lang)).toEqual(['ts', 'ts', 'ts']);
    const squash = (code: string) => code.replace(/\s+/g, ' ').trim();
    for (const { code } of blocks) expect(squash(read(EXAMPLES)), `${EXAMPLES} no longer holds:\n${code}`).toContain(squash(code));
  });

  it('refuses a TLS setting it cannot use at start, naming the variable', async () => {
    expect(() => loadConfig({ TABLE_NAME: 't', GW_TLS_CERT: tls.cert })).toThrow('GW_TLS_CERT needs GW_TLS_KEY too');
    expect(() => loadConfig({ TABLE_NAME: 't', GW_TLS_KEY: tls.key })).toThrow('GW_TLS_KEY needs GW_TLS_CERT too');
    const start = (files: { certFile: string; keyFile: string }) => startLocalServer({ deps: { ...plain.deps, config: { ...plain.deps.config, tls: files } } });
    await expect(start({ certFile: path.join(dir, 'missing.pem'), keyFile: tls.key })).rejects.toThrow(/GW_TLS_CERT cannot be read \(ENOENT/);
    const notPem = path.join(dir, 'not.pem');
    writeFileSync(notPem, 'not a certificate');
    await expect(start({ certFile: notPem, keyFile: tls.key })).rejects.toThrow(/GW_TLS_CERT and GW_TLS_KEY must be a PEM certificate and its private key/);
  });
});
