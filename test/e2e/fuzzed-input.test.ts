/**
 * What a fuzzer found answering 500: over-long ids and slugs in every route's path, methods no
 * route takes, and bodies of the wrong shape. Every one is a 4xx with a clear message, in both modes.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_ROUTES } from '../../layers/core/src/admin/routes.ts';
import { GATEWAY_ROUTES } from '../../layers/core/src/gateway/routes.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';

const LONG = 'x'.repeat(1500);

/** The status of a request with any method (fetch refuses TRACE); 0 when the connection closed without an answer. */
function rawStatus(url: string, method: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(url, { method, headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** A route's path with every parameter replaced by an over-long value. */
const withLongParams = (path: string, style: 'hono' | 'openai') =>
  style === 'hono' ? path.replace(/:[A-Za-z0-9_]+(\{[^}]*\})?/g, LONG) : `/v1${path.replace(/\{[A-Za-z0-9_]+\}/g, LONG)}`;

describe.each(['direct', 'lambda'] as const)('fuzzed input (%s mode)', (mode) => {
  let gw: TestGantry;
  let key: string;

  beforeAll(async () => {
    gw = await startGantry(mode);
    key = await gw.workspaceKey(['completions.write']);
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('answers 4xx to ids and slugs over 1,000 characters on every admin route', async () => {
    const failures: string[] = [];
    for (const route of ADMIN_ROUTES.filter((r) => r.path.includes(':'))) {
      const path = withLongParams(route.path, 'hono');
      const res = await fetch(gw.url + path, {
        method: route.method,
        headers: { 'x-gw-api-key': ADMIN_KEY, 'content-type': 'application/json' },
        body: route.method === 'GET' || route.method === 'DELETE' ? undefined : '{}',
      });
      const text = await res.text();
      if (res.status >= 500 || res.status < 400) failures.push(`${route.method} ${route.path}: ${res.status} ${text.slice(0, 120)}`);
    }
    expect(failures).toEqual([]);
  });

  it('answers 4xx to over-long ids on every gateway route', async () => {
    const failures: string[] = [];
    for (const { path, spec } of GATEWAY_ROUTES.filter((r) => r.path.includes('{'))) {
      const res = await fetch(gw.url + withLongParams(path, 'openai'), {
        method: spec.method,
        headers: { 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'content-type': 'application/json' },
        body: spec.method === 'GET' || spec.method === 'DELETE' ? undefined : '{}',
      });
      const text = await res.text();
      if (res.status >= 500 || res.status < 400) failures.push(`${spec.method} ${path}: ${res.status} ${text.slice(0, 120)}`);
    }
    expect(failures).toEqual([]);
  });

  it.each(['TRACE', 'OPTIONS', 'HEAD', 'PROPFIND', 'CONNECTX'])('answers the %s method without a 500', async (method) => {
    for (const path of ['/v1/chat/completions', '/v1/api-keys', '/v1/some/passthrough', '/v1/health']) {
      const status = await rawStatus(gw.url + path, method, { 'x-gw-api-key': key });
      expect({ path, method, status, answered: status > 0 && status < 500 }).toMatchObject({ path, method, answered: true });
    }
  });
});
