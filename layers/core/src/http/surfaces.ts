/**
 * Which surface a path belongs to, the gateway's or the admin API's, from the path alone: errors
 * answered before any route (and the passthrough's refusal of admin paths) take the surface's shape.
 */
import { ADMIN_PREFIXES, ADMIN_V2_PREFIXES, GATEWAY_PATHS_UNDER_ADMIN, PROVIDER_PREFIXES_LIKE_ADMIN } from './prefixes.ts';
import type { ErrorSurface } from './error-response.ts';
import { nearMiss } from './suggest.ts';

const prefixPattern = (prefixes: readonly string[]) => prefixes.map((p) => p.replace(/[-.]/g, '\\$&')).join('|');
const adminPath = new RegExp(`^/v1/(${prefixPattern(ADMIN_PREFIXES)})(/|$)|^/v2/(${prefixPattern(ADMIN_V2_PREFIXES)})(/|$)`);

const gatewayUnderAdmin = new RegExp(
  `^/v1/(${GATEWAY_PATHS_UNDER_ADMIN.map((p) => p.replace(/[-.]/g, '\\$&').replace(/\{[A-Za-z]+\}/g, '[^/]+')).join('|')})$`,
);

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
