/**
 * The core: a Hono app from Web Request to Web Response. Runtime adapters (Lambda, local server)
 * only translate events to Requests and Responses back; route modules add the gateway and the
 * admin API, so each Lambda bundles only what it serves.
 */
import { Hono } from 'hono';
import type { CoreDeps } from './deps.ts';
import type { Fallback, RouteModule } from './http/route-module.ts';
import { adminPathMeant, surfaceOf } from './http/surfaces.ts';
import { asGantryError, RouteNotFoundError } from './http/errors.ts';
import { toResponse } from './http/error-response.ts';
import { withPortkeyHeaderAlias } from './http/header-alias.ts';
import { jsonResponse } from './http/json.ts';

/** Health answers within a second, whatever the database does. */
const HEALTH_DEADLINE_MS = 900;

async function probeDatabase(deps: CoreDeps, now: number): Promise<{ ok: boolean; error: string }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<{ ok: boolean; error: string }>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, error: `no answer within ${HEALTH_DEADLINE_MS} ms` }), HEALTH_DEADLINE_MS);
  });
  const probe = deps.repos.bootstrap.probeWrite(now).then(
    () => ({ ok: true, error: '' }),
    (err: unknown) => ({ ok: false, error: err instanceof Error ? err.name : 'unknown' }),
  );
  try {
    return await Promise.race([probe, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The local queues' spools (`spool: {<queue>: {...}}`), where there are any: how much waits on disk
 * and how much could not. A full spool is a failing check: new events are kept in memory only.
 */
function spoolHealth(deps: CoreDeps): { detail: Record<string, unknown>; checks: Record<string, string> } {
  const spools = deps.queues.spools?.() ?? {};
  const detail: Record<string, unknown> = {};
  const checks: Record<string, string> = {};
  for (const [queue, s] of Object.entries(spools)) {
    detail[queue] = { bytes: s.bytes, max_bytes: s.maxBytes, pending: s.pending, dropped: s.dropped, full: s.full };
    if (s.full) checks[`spool.${queue}`] = `full (${s.bytes} of ${s.maxBytes} bytes): new messages are kept in memory only`;
  }
  return { detail: Object.keys(detail).length > 0 ? { spool: detail } : {}, checks };
}

export function createApp(deps: CoreDeps, modules: readonly RouteModule[]): Hono {
  const app = new Hono();
  let lastProbe = { at: -Infinity, ok: true, error: '' };

  app.get('/v1/health', async () => {
    const now = deps.clock.now();
    // Probe the table at most every 5 s: health checks must not turn into write load.
    if (now - lastProbe.at > 5_000) {
      lastProbe = { at: now, ...(await probeDatabase(deps, now)) };
    }
    const spool = spoolHealth(deps);
    const checks = { ...(lastProbe.ok ? {} : { database: `not writable (${lastProbe.error})` }), ...spool.checks };
    return Object.keys(checks).length === 0
      ? jsonResponse({ status: 'ok', ...spool.detail })
      : jsonResponse({ status: 'degraded', checks, ...spool.detail }, 503);
  });

  const fallbacks: Fallback[] = [];
  for (const mount of modules) {
    const fallback = mount(app, deps);
    if (fallback) fallbacks.push(fallback);
  }

  app.notFound(async (c) => {
    for (const fallback of fallbacks) {
      const res = await fallback(c);
      if (res) return res;
    }
    return toResponse(new RouteNotFoundError(c.req.method, c.req.path, adminPathMeant(c.req.path)), surfaceOf(c.req.path));
  });
  app.onError((err, c) => {
    const e = asGantryError(err);
    if (e.status >= 500) deps.logger.error('unhandled error', { path: c.req.path, error: err });
    return toResponse(e, surfaceOf(c.req.path));
  });
  // Header aliases outermost: every route and fallback then reads x-gw-* only.
  if (deps.config.portkeyHeaders) app.fetch = withPortkeyHeaderAlias(app.fetch);
  return app;
}
