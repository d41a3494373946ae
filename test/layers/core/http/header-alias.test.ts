/**
 * The `x-portkey-` header alias at the edge: a request's alias headers are read as `x-gw-`, the
 * `x-gw-` one winning when both are sent, none left for a provider; the answer goes back under the
 * prefix the request used; GW_PORTKEY_HEADERS=OFF turns the alias off.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { createApp } from '../../../../layers/core/src/app.ts';
import type { RouteModule } from '../../../../layers/core/src/http/route-module.ts';
import { loadConfig } from '../../../../layers/core/src/config.ts';
import { createTestDeps } from '../../../support/deps.ts';

/** Echoes the request's headers and answers with an x-gw- header of its own. */
const echo: RouteModule = (app: Hono) => {
  app.get('/v1/echo', (c) => {
    const seen: Record<string, string> = {};
    c.req.raw.headers.forEach((v, k) => (seen[k] = v));
    return new Response(JSON.stringify(seen), { headers: { 'x-gw-trace-id': 't-1', 'content-type': 'application/json' } });
  });
};

describe('x-portkey- header alias', () => {
  let on: CoreDeps;
  let off: CoreDeps;
  beforeAll(async () => {
    [on, off] = await Promise.all([createTestDeps(), createTestDeps({ GW_PORTKEY_HEADERS: 'off' })]);
  });
  afterAll(() => {
    on.upstream.close();
    off.upstream.close();
  });

  it('reads x-portkey-* as x-gw-* (x-gw-* wins) and answers under x-portkey-', async () => {
    const res = await createApp(on, [echo]).request('/v1/echo', { headers: { 'x-portkey-provider': 'openai', 'x-portkey-config': 'pk', 'x-gw-config': 'gw' } });
    const seen = (await res.json()) as Record<string, string>;
    expect(seen['x-gw-provider']).toBe('openai');
    expect(seen['x-gw-config']).toBe('gw');
    expect(Object.keys(seen).filter((k) => k.startsWith('x-portkey-'))).toEqual([]);
    expect(res.headers.get('x-portkey-trace-id')).toBe('t-1');
    expect(res.headers.get('x-gw-trace-id')).toBeNull();
  });

  it('leaves requests without the alias untouched', async () => {
    const res = await createApp(on, [echo]).request('/v1/echo', { headers: { 'x-gw-provider': 'openai' } });
    expect(res.headers.get('x-gw-trace-id')).toBe('t-1');
    expect(res.headers.get('x-portkey-trace-id')).toBeNull();
  });

  it('is off with GW_PORTKEY_HEADERS=OFF', async () => {
    expect(loadConfig({ TABLE_NAME: 't', GW_PORTKEY_HEADERS: 'OFF' }).portkeyHeaders).toBe(false);
    expect(loadConfig({ TABLE_NAME: 't' }).portkeyHeaders).toBe(true);
    expect(() => loadConfig({ TABLE_NAME: 't', GW_PORTKEY_HEADERS: 'maybe' })).toThrow(/GW_PORTKEY_HEADERS/);
    const res = await createApp(off, [echo]).request('/v1/echo', { headers: { 'x-portkey-provider': 'openai' } });
    const seen = (await res.json()) as Record<string, string>;
    expect(seen['x-gw-provider']).toBeUndefined();
    expect(res.headers.get('x-gw-trace-id')).toBe('t-1');
  });
});
