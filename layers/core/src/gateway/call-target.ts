/**
 * Calls one resolved target: finds its provider, builds the URL (custom hosts SSRF-checked), the
 * headers (from scratch: no `x-gw-*` header and no gateway key can leave) and the body
 * (`override_params` merged over the request), and sends it with the per-attempt timeout.
 */
import { ValidationError } from '../http/errors.ts';
import { findProvider, providerIds } from '../providers/registry.ts';
import type { EndpointType, ProviderDefinition } from '../providers/types.ts';
import { parseOutboundUrl, type TrustedHosts } from '../security/ssrf.ts';
import type { Attempt, TargetCaller } from './routing/execute.ts';
import type { ResolvedTarget } from './routing/types.ts';
import type { UpstreamClient } from './upstream.ts';

export interface CallInput {
  endpoint: EndpointType;
  /** The body as the client sent it; sent unchanged when nothing overrides it. */
  bodyText: string;
  body: Record<string, unknown>;
  clientHeaders: Headers;
  /** `x-gw-request-timeout`: wins over the config's `request_timeout`. */
  headerTimeoutMs?: number | undefined;
  /** True when the target came from headers rather than a config: errors name the headers. */
  fromHeaders: boolean;
}

export interface CallerDeps {
  upstream: UpstreamClient;
  trustedHosts: TrustedHosts;
}

/** Never forwarded, even when listed in forward_headers. */
const UNFORWARDABLE = /^(x-gw-.*|host|content-length|connection|transfer-encoding|keep-alive|upgrade|te|trailer)$/i;

const field = (input: CallInput, target: ResolvedTarget, key: 'provider' | 'custom_host') =>
  input.fromHeaders ? (key === 'provider' ? 'x-gw-provider' : 'x-gw-custom-host') : `${target.path}.${key}`;

export function resolveProvider(target: ResolvedTarget, input: CallInput): { provider: ProviderDefinition; path: string } {
  const id = target.provider;
  if (!id) {
    throw ValidationError.field(field(input, target, 'provider'), 'is required: name a provider (e.g. openai) or send x-gw-config');
  }
  const provider = findProvider(id);
  if (!provider) {
    throw ValidationError.field(field(input, target, 'provider'), `unknown provider "${id}"; known: ${providerIds().join(', ')}`);
  }
  const path = provider.endpoints[input.endpoint];
  if (!path) {
    throw ValidationError.field(field(input, target, 'provider'), `provider ${provider.id} does not support the ${input.endpoint} endpoint`);
  }
  return { provider, path };
}

/** The body a target's provider receives: the client's, with the target's override_params over it. */
export function providerBody(input: CallInput, target: ResolvedTarget): Record<string, unknown> {
  const overrides = target.override_params;
  return Object.keys(overrides).length ? { ...input.body, ...overrides } : input.body;
}

/** The provider key for a target: its own `api_key`, else the client's `Authorization: Bearer`. */
export function bearerKey(headers: Headers): string | undefined {
  return headers.get('authorization')?.match(/^Bearer\s+(.+)$/i)?.[1]?.trim();
}

export function createTargetCaller(deps: CallerDeps, input: CallInput): TargetCaller {
  const clientKey = bearerKey(input.clientHeaders);
  return async (target, signal): Promise<Attempt> => {
    const { provider, path } = resolveProvider(target, input);
    const base = target.custom_host
      ? parseOutboundUrl(target.custom_host, field(input, target, 'custom_host'), deps.trustedHosts).href.replace(/\/+$/, '')
      : provider.baseUrl;

    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'gantry' };
    for (const name of target.forward_headers ?? []) {
      const value = input.clientHeaders.get(name);
      if (value !== null && !UNFORWARDABLE.test(name)) headers[name.toLowerCase()] = value;
    }
    const key = target.api_key ?? clientKey;
    if (key) {
      if (provider.auth.kind === 'bearer') headers.authorization = `Bearer ${key}`;
      else headers[provider.auth.header] = key;
    }
    for (const [option, header] of Object.entries(provider.optionHeaders ?? {})) {
      const value = target.options[option] ?? input.clientHeaders.get(`x-gw-${option.replace(/_/g, '-')}`);
      if (typeof value === 'string' && value) headers[header] = value;
    }

    const body = Object.keys(target.override_params).length ? JSON.stringify(providerBody(input, target)) : input.bodyText;
    const res = await deps.upstream.send({
      url: new URL(base + path),
      method: 'POST',
      headers,
      body,
      timeoutMs: input.headerTimeoutMs ?? target.request_timeout,
      signal,
    });
    return { status: res.status, headers: res.headers, body: res.body };
  };
}
