/** The core app's own routes: health (ok and degraded) and unknown routes in each surface's shape. */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../layers/core/src/app.ts';
import { isAdminPath } from '../../../layers/core/src/http/surfaces.ts';
import { adminModule } from '../../../layers/core/src/admin/routes.ts';
import { gatewayModule } from '../../../layers/core/src/gateway/routes.ts';
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import { createRepositories } from '../../../layers/core/src/store/repositories.ts';
import { createTestDeps } from '../../support/deps.ts';

describe('core app', () => {
  let deps: CoreDeps;
  beforeAll(async () => {
    deps = await createTestDeps();
  });
  afterAll(() => deps.upstream.close());

  it('answers health ok when the table accepts writes', async () => {
    const res = await createApp(deps, []).request('/v1/health');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('answers degraded, naming the failing check, when the table cannot be written', async () => {
    const broken: CoreDeps = { ...deps, repos: createRepositories(deps.repos.table.doc, 'missing-table') };
    const res = await createApp(broken, []).request('/v1/health');
    expect(res.status).toBe(503);
    const body = (await res.json()) as { status: string; checks: { database: string } };
    expect(body.status).toBe('degraded');
    expect(body.checks.database).toContain('not writable');
  });

  it('reports the local spools in health (size, bound, drops), and degraded while one is full', async () => {
    const local = await createTestDeps({ GW_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'gantry-health-')), GW_LOG_SPOOL_MAX_MB: '1' });
    try {
      const app = createApp(local, []);
      const ok = await app.request('/v1/health');
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ status: 'ok', spool: { logs: { bytes: 0, max_bytes: 1 << 20, pending: 0, dropped: 0, full: false } } });

      // A queue nobody consumes, sent more than its spool holds.
      const idle = local.queues.get<{ pad: string }>('idle');
      for (let i = 0; i < 12; i++) await idle.send({ pad: 'x'.repeat(100_000) });
      const full = await app.request('/v1/health');
      expect(full.status).toBe(503);
      expect(await full.json()).toMatchObject({
        status: 'degraded',
        checks: { 'spool.idle': expect.stringContaining('full') },
        spool: { idle: { pending: 10, dropped: 2, full: true, max_bytes: 1 << 20 } },
      });
    } finally {
      local.upstream.close();
    }
  });

  it('answers unknown admin paths in the admin shape and others in OpenAI shape', async () => {
    const app = createApp(deps, [gatewayModule, adminModule]);
    const admin = await app.request('/v1/api-keys/a/b/c', { method: 'PATCH' });
    expect(admin.status).toBe(404);
    expect(await admin.json()).toMatchObject({ object: 'error', errorCode: 'AB02' });
    const gateway = await app.request('/nowhere', { method: 'POST' });
    expect(gateway.status).toBe(404);
    expect(await gateway.json()).toMatchObject({ error: { type: 'not_found_error' } });
    // Every other /v1 path is the gateway's passthrough, which authenticates first; health keeps its 404.
    const proxied = await app.request('/v1/nowhere', { method: 'POST' });
    expect(proxied.status).toBe(401);
    const health = await app.request('/v1/health', { method: 'POST' });
    expect(health.status).toBe(404);
  });

  it('closes the admin API when API_ACCESS_ENABLED=OFF, naming the flag', async () => {
    const off = await createTestDeps({ API_ACCESS_ENABLED: 'OFF' });
    const res = await createApp(off, [adminModule]).request('/v1/api-keys');
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ errorCode: 'AB03', message: expect.stringContaining('API_ACCESS_ENABLED') });
    off.upstream.close();
  });
});

describe('admin and gateway paths', () => {
  it('sends a prompt’s completions to the gateway and every other prompt path to the admin function', () => {
    expect(isAdminPath('/v1/prompts')).toBe(true);
    expect(isAdminPath('/v1/prompts/support@production/render')).toBe(true);
    expect(isAdminPath('/v1/prompts/partials/footer/versions')).toBe(true);
    expect(isAdminPath('/v1/prompts/support@production/completions')).toBe(false);
    expect(isAdminPath('/v1/prompts/support/completions/extra')).toBe(true);
    expect(isAdminPath('/v1/chat/completions')).toBe(false);
  });
});
