/**
 * The local server serves the built console at /console/ (both modes): files with their types,
 * hashed assets cached for a year, index.html for unknown pages (SPA fallback) but a 404 for a
 * missing asset, the redirect of /console, security headers on every answer, no path escape, and
 * a message naming the build command when the console is not built.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalServer, type LocalServer } from '../../lambdas/local/server.ts';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { createTestDeps } from '../support/deps.ts';

const INDEX =
  '<!doctype html><html lang="en"><head><title>Gantry</title><script type="module" src="/console/assets/index-Bx7kQ2mZ.js"></script></head><body><div id="app"></div></body></html>';
const SCRIPT = 'document.getElementById("app").textContent = "hello";';

function builtConsole(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gantry-console-'));
  mkdirSync(path.join(dir, 'assets'));
  writeFileSync(path.join(dir, 'index.html'), INDEX);
  writeFileSync(path.join(dir, 'assets', 'index-Bx7kQ2mZ.js'), SCRIPT);
  writeFileSync(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  // A secret beside the console directory: no path may reach it.
  writeFileSync(path.join(dir, '..', `${path.basename(dir)}-secret.txt`), 'secret');
  return dir;
}

const get = async (url: string, init: RequestInit = {}) => {
  const res = await fetch(url, { redirect: 'manual', ...init });
  return { status: res.status, headers: res.headers, text: await res.text() };
};

describe.each(['direct', 'lambda'] as const)('console static files (%s mode)', (mode) => {
  let deps: CoreDeps;
  let server: LocalServer;
  let unbuilt: LocalServer;
  let dir: string;

  beforeAll(async () => {
    dir = builtConsole();
    deps = await createTestDeps();
    [server, unbuilt] = await Promise.all([
      startLocalServer({ deps, mode, consoleDir: dir }),
      startLocalServer({ deps, mode, consoleDir: path.join(dir, 'missing') }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), unbuilt?.close()]);
    deps?.upstream.close();
  });

  it('leads / to the console', async () => {
    const r = await get(`${server.url}/`);
    expect(r.status).toBe(302);
    expect(r.headers.get('location')).toBe('/console/');
    expect((await get(`${server.url}/?x=1`)).headers.get('location')).toBe('/console/');
  });

  it('serves index.html at /console/ with a strict CSP and the other security headers', async () => {
    const r = await get(`${server.url}/console/`);
    expect(r.status).toBe(200);
    expect(r.text).toBe(INDEX);
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('no-cache');
    const csp = r.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('referrer-policy')).toBe('no-referrer');
    expect(r.headers.get('x-frame-options')).toBe('DENY');
  });

  it('caches hashed assets for a year with their type', async () => {
    const r = await get(`${server.url}/console/assets/index-Bx7kQ2mZ.js`);
    expect(r.status).toBe(200);
    expect(r.text).toBe(SCRIPT);
    expect(r.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const icon = await get(`${server.url}/console/favicon.svg`);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.headers.get('cache-control')).toBe('no-cache');
  });

  it('answers index.html for any page of the app, 404 for a missing asset, and redirects /console', async () => {
    for (const page of ['/console/logs', '/console/api-keys/123/edit', '/console/configs?page=2']) {
      const r = await get(server.url + page);
      expect(r.status, page).toBe(200);
      expect(r.text, page).toBe(INDEX);
      expect(r.headers.get('content-security-policy'), page).toContain("default-src 'self'");
    }
    const missing = await get(`${server.url}/console/assets/gone-Zz9aaaaa.js`);
    expect(missing.status).toBe(404);
    expect(missing.text).not.toContain('<html');
    const bare = await get(`${server.url}/console?x=1`);
    expect(bare.status).toBe(308);
    expect(bare.headers.get('location')).toBe('/console/?x=1');
  });

  it('never reads outside the console directory and refuses writes', async () => {
    const name = `${path.basename(dir)}-secret.txt`;
    for (const p of [`/console/../${name}`, `/console/%2e%2e/${name}`, `/console/..%2f${name}`, '/console/%E0%A4%A']) {
      const r = await get(server.url + p);
      expect(r.text, p).not.toBe('secret');
      expect([200, 404], p).toContain(r.status);
    }
    const post = await get(`${server.url}/console/`, { method: 'POST', body: '{}' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('leaves the API alone and names the build command when the console is not built', async () => {
    expect((await get(`${server.url}/v1/health`)).status).toBe(200);
    expect((await get(`${server.url}/consoles`)).status).toBe(404);
    const r = await get(`${unbuilt.url}/console/`);
    expect(r.status).toBe(404);
    expect(r.text).toContain('infra/local-build.ts console');
  });
});
