/**
 * Resolves where a gateway request goes from its headers: `x-gw-provider` plus the client's
 * `Authorization`, optionally `x-gw-custom-host` (SSRF-checked). Headers for the provider are built
 * from scratch, so no `x-gw-*` header and no gateway key can ever reach it.
 */
import { ValidationError } from '../http/errors.ts';
import { findProvider, providerIds } from '../providers/registry.ts';
import type { EndpointType, ProviderDefinition } from '../providers/types.ts';
import { parseOutboundUrl, type TrustedHosts } from '../security/ssrf.ts';

export interface Target {
  provider: ProviderDefinition;
  /** Full URL of the endpoint. */
  url: URL;
  headers: Record<string, string>;
}

const MAX_TIMEOUT_MS = 15 * 60 * 1000;

export function resolveTarget(headers: Headers, endpoint: EndpointType, trusted: TrustedHosts): Target {
  const providerId = headers.get('x-gw-provider');
  if (!providerId) {
    throw ValidationError.field('x-gw-provider', 'is required: name a provider (e.g. openai) or send x-gw-config');
  }
  const provider = findProvider(providerId);
  if (!provider) {
    throw ValidationError.field('x-gw-provider', `unknown provider "${providerId}"; known: ${providerIds().join(', ')}`);
  }
  const path = provider.endpoints[endpoint];
  if (!path) throw ValidationError.field('x-gw-provider', `provider ${provider.id} does not support ${endpoint}`);

  const customHost = headers.get('x-gw-custom-host');
  const base = customHost
    ? parseOutboundUrl(customHost, 'x-gw-custom-host', trusted).href.replace(/\/+$/, '')
    : provider.baseUrl;
  const url = new URL(base + path);

  const out: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'gantry' };
  const authorization = headers.get('authorization');
  const key = authorization?.match(/^Bearer\s+(.+)$/i)?.[1]?.trim();
  if (key) {
    if (provider.auth.kind === 'bearer') out.authorization = `Bearer ${key}`;
    else out[provider.auth.header] = key;
  }
  return { provider, url, headers: out };
}

/** `x-gw-request-timeout`: whole milliseconds, at most 15 minutes. */
export function parseRequestTimeout(headers: Headers): number | undefined {
  const raw = headers.get('x-gw-request-timeout');
  if (raw === null) return undefined;
  const ms = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > MAX_TIMEOUT_MS) {
    throw ValidationError.field('x-gw-request-timeout', `must be a whole number of milliseconds between 1 and ${MAX_TIMEOUT_MS}`);
  }
  return ms;
}
