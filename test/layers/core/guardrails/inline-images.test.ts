/**
 * `default.inlineImageUrls` and `default.validUrls` through the guarded fetch: images inlined as
 * data URLs for the listed providers; the SSRF guard on every URL and redirect; `maxSizeBytes`
 * enforced from Content-Length and while reading; `timeoutMs`; fail-open unless `failOnError`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckDeps } from '../../../../layers/core/src/kernel/guardrails.ts';
import { createCheckDeps } from '../../../../layers/core/src/guardrails/check-deps.ts';
import { UpstreamClient } from '../../../../layers/core/src/gateway/upstream.ts';
import { systemClock } from '../../../../layers/core/src/ports/clock.ts';
import { TrustedHosts } from '../../../../layers/core/src/security/ssrf.ts';
import { startMockServer, type MockServer, type Reply } from '../../../support/mock-http.ts';
import { problems, run } from './support.ts';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

let server: MockServer;
let trustedDeps: CheckDeps;
let untrustedDeps: CheckDeps;
const clients: UpstreamClient[] = [];

function depsWith(hosts: string[]): CheckDeps {
  const trusted = new TrustedHosts(hosts);
  const client = new UpstreamClient(trusted);
  clients.push(client);
  return createCheckDeps(client, trusted, systemClock);
}

beforeAll(async () => {
  server = await startMockServer(async (req): Promise<Reply> => {
    const path = req.path;
    if (path === '/cat.png') return { headers: { 'content-type': 'image/png' }, chunks: [new Uint8Array(PNG)] };
    if (path === '/big.png') return { headers: { 'content-type': 'image/png', 'content-length': '5000' }, text: 'x'.repeat(5000) };
    if (path === '/stream.png') return { headers: { 'content-type': 'image/png' }, chunks: Array.from({ length: 10 }, () => 'y'.repeat(1000)) };
    if (path === '/page.html') return { headers: { 'content-type': 'text/html' }, text: '<html></html>' };
    if (path === '/slow.png') {
      await sleep(300);
      return { headers: { 'content-type': 'image/png' }, text: 'late' };
    }
    if (path === '/to-cat') return { status: 302, headers: { location: '/cat.png' }, text: '' };
    if (path === '/to-private') return { status: 302, headers: { location: 'http://10.0.0.7/secret.png' }, text: '' };
    if (path === '/to-metadata') return { status: 301, headers: { location: 'http://169.254.169.254/latest/meta-data/' }, text: '' };
    if (path === '/missing') return { status: 404, text: 'no' };
    return { status: 200, text: 'ok' };
  });
  trustedDeps = depsWith(['127.0.0.1']);
  untrustedDeps = depsWith([]);
});
afterAll(async () => {
  for (const c of clients) c.close();
  await server.close();
});

const imageRequest = (...urls: string[]) => ({
  text: 'what is this',
  provider: 'anthropic',
  json: {
    model: 'claude',
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'what is this' }, ...urls.map((url) => ({ type: 'image_url', image_url: { url, detail: 'low' } }))] },
    ],
  },
});

const urlsOf = (json: Record<string, unknown> | undefined): string[] =>
  ((json?.messages as { content: { image_url?: { url: string } }[] }[])[0]?.content ?? []).flatMap((p) => (p.image_url ? [p.image_url.url] : []));

describe('default.inlineImageUrls', () => {
  it('inlines external images of listed providers as base64 data URLs, following redirects', async () => {
    const out = await run('default.inlineImageUrls', { providers: ['anthropic'] }, imageRequest(`${server.url}/cat.png`, `${server.url}/to-cat`), trustedDeps);
    expect(out).toMatchObject({ verdict: true, transformed: true, error: null, data: { inlined: 2, failed: 0 } });
    const dataUrl = `data:image/png;base64,${PNG.toString('base64')}`;
    expect(urlsOf(out.transformedData?.request?.json)).toEqual([dataUrl, dataUrl]);
  });

  it('leaves requests to other providers, and data URLs, alone', async () => {
    const other = await run('default.inlineImageUrls', { providers: ['bedrock'] }, imageRequest(`${server.url}/cat.png`), trustedDeps);
    expect(other.transformed).toBeUndefined();
    const inline = await run('default.inlineImageUrls', {}, imageRequest('data:image/png;base64,AAAA'), trustedDeps);
    expect(inline).toMatchObject({ verdict: true, data: { inlined: 0 } });
  });

  it('refuses private addresses, also behind a redirect, and metadata endpoints', async () => {
    const direct = await run('default.inlineImageUrls', { failOnError: true }, imageRequest(`${server.url}/cat.png`), untrustedDeps);
    expect(direct.verdict).toBe(false);
    expect(direct.error?.message).toMatch(/private or reserved/);
    const redirected = await run('default.inlineImageUrls', { failOnError: true }, imageRequest(`${server.url}/to-private`), trustedDeps);
    expect(redirected).toMatchObject({ verdict: false, error: { message: expect.stringMatching(/10\.0\.0\.7.*private or reserved/) } });
    const metadata = await run('default.inlineImageUrls', {}, imageRequest(`${server.url}/to-metadata`), trustedDeps);
    expect(metadata).toMatchObject({ verdict: true, error: { message: expect.stringMatching(/metadata/) } });
    expect(metadata.transformed).toBeUndefined();
  });

  it('enforces maxSizeBytes from Content-Length and while reading, and timeoutMs', async () => {
    const declared = await run('default.inlineImageUrls', { maxSizeBytes: 1000, failOnError: true }, imageRequest(`${server.url}/big.png`), trustedDeps);
    expect(declared.error?.message).toMatch(/5000 bytes, more than the limit of 1000/);
    const streamed = await run('default.inlineImageUrls', { maxSizeBytes: 2500, failOnError: true }, imageRequest(`${server.url}/stream.png`), trustedDeps);
    expect(streamed.error?.message).toMatch(/more than the limit of 2500 bytes/);
    const slow = await run('default.inlineImageUrls', { timeoutMs: 50, failOnError: true }, imageRequest(`${server.url}/slow.png`), trustedDeps);
    expect(slow.error?.message).toMatch(/within 50 ms/);
  });

  it('keeps what it could inline when another image fails (fail-open), and refuses non-images', async () => {
    const out = await run(
      'default.inlineImageUrls',
      {},
      imageRequest(`${server.url}/cat.png`, `${server.url}/page.html`, `${server.url}/missing`),
      trustedDeps,
    );
    expect(out).toMatchObject({ verdict: true, transformed: true, data: { inlined: 1, failed: 2 } });
    expect(out.error?.message).toMatch(/is not an image \(content-type text\/html\).*answered HTTP 404/);
    expect(urlsOf(out.transformedData?.request?.json)[1]).toBe(`${server.url}/page.html`);
  });

  it('names bad parameters', () => {
    expect(problems('default.inlineImageUrls', { providers: 'openai', maxSizeBytes: -1, timeoutMs: 1.5 })).toEqual([
      'providers: must be an array of strings',
      'maxSizeBytes: must be at least 1',
      'timeoutMs: must be an integer',
    ]);
  });
});

describe('default.validUrls', () => {
  it('passes when every URL answers, fails on a broken or refused one', async () => {
    const ok = await run('default.validUrls', {}, { event: 'afterRequestHook', text: 'q', response: { text: `See ${server.url}/cat.png.` } }, trustedDeps);
    expect(ok).toMatchObject({ verdict: true, data: { urls: 1, invalid: [] } });
    const broken = await run(
      'default.validUrls',
      {},
      { event: 'afterRequestHook', text: 'q', response: { text: `See ${server.url}/missing and ${server.url}/cat.png` } },
      trustedDeps,
    );
    expect(broken).toMatchObject({ verdict: false, data: { invalid: [`${server.url}/missing`] } });
    const refused = await run('default.validUrls', { not: true }, { text: `${server.url}/cat.png` }, untrustedDeps);
    expect(refused.verdict).toBe(true);
  });

  it('with onlyDNS, checks that host names resolve', async () => {
    expect((await run('default.validUrls', { onlyDNS: true }, { text: 'go to http://localhost:1/x' }, trustedDeps)).verdict).toBe(true);
    expect((await run('default.validUrls', { onlyDNS: true, timeout: 2000 }, { text: 'go to https://no-such-host.invalid/x' }, trustedDeps)).verdict).toBe(
      false,
    );
  });
});
