/**
 * DNS rebinding (MCP Streamable HTTP: a server MUST validate the `Origin` header): a page on a
 * foreign site whose name its owner points at this server's address makes the browser send that
 * site's name as `Host` and `Origin`, so same-origin alone proves nothing. A browser sends `Origin`
 * on every POST and DELETE and on every cross-origin GET, so a request that carries one is served
 * only when the origin is listed in GW_MCP_ALLOWED_ORIGINS (`*`: any), or when it is the request's
 * own origin and `Host` names this server: an IP address (a rebinding needs a name), `localhost`
 * or a `.localhost` name, the host of GW_PUBLIC_URL, or the host of a listed origin. A request
 * without `Origin` (not a page in a browser) is not refused for it.
 */
import { isIP } from 'node:net';
import type { AppConfig } from '../../config.ts';

export interface OriginPolicy {
  anyOrigin: boolean;
  origins: ReadonlySet<string>;
  /** Host names (no port) this server is known by, besides IP addresses and localhost. */
  hosts: ReadonlySet<string>;
}

const hostnameOf = (url: string): string | undefined => (URL.canParse(url) ? new URL(url).hostname : undefined);

export function originPolicy(config: Pick<AppConfig, 'publicUrl' | 'mcpAllowedOrigins'>): OriginPolicy {
  const listed = (config.mcpAllowedOrigins ?? []).filter((o) => o !== '*');
  const hosts = [config.publicUrl, ...listed].flatMap((u) => (u ? (hostnameOf(u) ?? []) : []));
  return { anyOrigin: config.mcpAllowedOrigins?.includes('*') ?? false, origins: new Set(listed), hosts: new Set(hosts) };
}

/** Whether a host name (from a URL: lowercase, IPv6 in brackets) is one this server answers as. */
function knownHost(hostname: string, policy: OriginPolicy): boolean {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) !== 0 || bare === 'localhost' || bare.endsWith('.localhost') || policy.hosts.has(bare);
}

/** Why the request must be refused (403), or undefined when its Host and Origin may call. */
export function originRefusal(req: Request, policy: OriginPolicy): string | undefined {
  const origin = req.headers.get('origin');
  if (origin === null || policy.anyOrigin) return undefined;
  const from = URL.canParse(origin) ? new URL(origin) : undefined;
  if (from && policy.origins.has(from.origin)) return undefined;
  const host = new URL(req.url);
  if (from && from.host === host.host && knownHost(host.hostname, policy)) return undefined;
  if (from && from.host === host.host)
    return `Host ${host.host} is not a name this server is known by (DNS rebinding); set GW_PUBLIC_URL or GW_MCP_ALLOWED_ORIGINS`;
  return `Origin ${origin.slice(0, 200)} may not call the MCP gateway; allow it with GW_MCP_ALLOWED_ORIGINS`;
}
