/**
 * The core: a Hono app from Web Request to Web Response. Runtime adapters (Lambda, local server)
 * only translate events to Requests and Responses back; route modules add the gateway and the
 * admin API, so each Lambda bundles only what it serves.
 */
import { Hono, type Context } from 'hono';
import type { CoreDeps } from '../deps.ts';
import { ADMIN_PREFIXES, ADMIN_V2_PREFIXES, GATEWAY_PATHS_UNDER_ADMIN, PROVIDER_PREFIXES_LIKE_ADMIN } from '../admin/prefixes.ts';
import { asGantryError, RouteNotFoundError } from './errors.ts';
import { toResponse, type ErrorSurface } from './error-response.ts';
import { withPortkeyHeaderAlias } from './header-alias.ts';
import { jsonResponse } from './json.ts';
import { nearMiss } from './suggest.ts';

/**
 * Answers a request that no route of any module matched, or returns undefined to leave it to the
 * next fallback and finally the 404 (the gateway's passthrough is one). Running only after every
 * route, whatever the module order, a fallback can never shadow a route.
 */
export type Fallback = (c: Context) => Response | undefined | Promise<Response | undefined>;

/** Mounts a module's routes; may return a fallback. */
export type RouteModule = (app: Hono, deps: CoreDeps) => void | Fallback;

const prefixPattern = (prefixes: readonly string[]) => prefixes.map((p) => p.replace(/[-.]/g, '\\$&')).join('|');
const adminPath = new RegExp(`^/v1/(${prefixPattern(ADMIN_PREFIXES)})(/|$)|^/v2/(${prefixPattern(ADMIN_V2_PREFIXES)})(/|$)`);

const gatewayUnderAdmin = new RegExp(`^/v1/(${GATEWAY_PATHS_UNDER_ADMIN.map((p) => p.replace(/[-.]/g, '\\$&').replace(/\{[A-Za-z]+\}/g, '[^/]+')).join('|')})$`);

export const isAdminPath = (path: string): boolean => adminPath.test(path) && !gatewayUnderAdmin.test(path);

/**
 * The admin path a mistyped one meant: its first segment is a slip (http/suggest.ts `nearMiss`) of
 * an admin prefix (`/v1/config/x` -> `/v1/configs/x`, `/v1/Audit_Logs` -> `/v1/audit-logs`). Such a
 * path is the admin API's, so it answers 404 AB02 with this suggestion instead of reaching the
 * passthrough, whose authentication would answer a confusing 403 or 400 for it.
 */
export function adminPathMeant(path: string): string | undefined {
  const m = /^\/(v1|v2)\/([^/]+)(.*)$/.exec(path);
  if (!m) return undefined;
  const [, version = '', segment = '', rest = ''] = m;
  if (PROVIDER_PREFIXES_LIKE_ADMIN.includes(segment)) return undefined;
  const prefix = nearMiss(segment, version === 'v1' ? ADMIN_PREFIXES : ADMIN_V2_PREFIXES);
  return prefix === undefined ? undefined : `/${version}/${prefix}${rest}`;
}

/** The surface a path belongs to, for errors answered before (or outside) any route. */
export const surfaceOf = (path: string): ErrorSurface => (isAdminPath(path) || adminPathMeant(path) !== undefined ? 'admin' : 'gateway');

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
