/**
 * Who is calling and what the request runs: the caller authenticated from the headers alone
 * (before any body is read), then the config (inline, saved, the key's, or made from headers) and
 * the request's routing headers.
 */
import { configOrigin } from '../observability/routing-facts.ts';
import { requireGatewayAccess, type GatewayPrincipal } from './access.ts';
import type { Flight } from './flight.ts';
import { checkConfigHooks } from './guard-entry.ts';
import { parseForwardHeaders, parseRequestTimeout } from './headers.ts';
import { resolveConfig, type ResolvedConfig } from './routing/resolve-config.ts';

export type { GatewayPrincipal } from './access.ts';

export interface Resolved extends ResolvedConfig {
  principal: GatewayPrincipal;
  /** `x-gw-request-timeout`: wins over the config's `request_timeout`. */
  headerTimeoutMs: number | undefined;
  /** Header names sent on as they are: the endpoint's own and `x-gw-forward-headers`. */
  forwardHeaders: readonly string[];
}

export async function authenticate(f: Flight): Promise<GatewayPrincipal> {
  const principal = await f.deps.keyAuth.authenticateRequest(f.headers, 'gateway');
  f.record.principal = principal;
  requireGatewayAccess(principal);
  return principal;
}

export async function resolve(f: Flight, principal: GatewayPrincipal): Promise<Resolved> {
  const headerTimeoutMs = parseRequestTimeout(f.headers);
  const requested = parseForwardHeaders(f.headers);
  const forwardHeaders = f.spec.forwardHeaders ? [...f.spec.forwardHeaders, ...requested] : requested;
  const resolved = await resolveConfig(f.headers, principal, f.deps);
  await checkConfigHooks(f, resolved.config);
  Object.assign(f.record, configOrigin(f.headers, principal, resolved.fromHeaders));
  return { ...resolved, principal, headerTimeoutMs, forwardHeaders };
}
