/**
 * Where a realtime target's WebSocket goes and with which headers: the provider's realtime path on
 * its base URL (or on the target's SSRF-checked custom host), `ws(s)://`, the model in the query
 * (Azure OpenAI: its deployment and api-version instead), and the provider key in the provider's
 * own header. Headers are built from scratch, so no `x-gw-*` header and no gateway key can leave.
 */
import { ValidationError } from '../../http/errors.ts';
import { findProvider } from '../../providers/registry.ts';
import { parseOutboundUrl, type TrustedHosts } from '../../security/ssrf.ts';
import { clientKeyOf, forwardedHeaders, providerBase, resolveProvider, type CallInput } from '../call-target.ts';
import type { ResolvedTarget } from '../../kernel/routing.ts';

/** The api-version Azure OpenAI's realtime preview path takes when the target names none. */
export const AZURE_REALTIME_API_VERSION = '2024-10-01-preview';

export interface RealtimeDestination {
  url: URL;
  headers: Record<string, string>;
}

const fieldOf = (input: CallInput, target: ResolvedTarget, key: 'provider' | 'custom_host') =>
  input.fromHeaders ? (key === 'provider' ? 'x-gw-provider' : 'x-gw-custom-host') : `${target.path}.${key}`;

export function realtimeDestination(input: CallInput, target: ResolvedTarget, model: string, trusted: TrustedHosts): RealtimeDestination {
  const declared = target.provider ? findProvider(target.provider) : undefined;
  // Native formats have no realtime WebSocket, except Azure OpenAI, which speaks OpenAI's events.
  if (declared?.native && declared.id !== 'azure-openai') {
    throw ValidationError.field(fieldOf(input, target, 'provider'), `provider ${declared.id} does not support the realtime endpoint`);
  }
  const { provider, path } = resolveProvider(target, input);
  const base = target.custom_host
    ? parseOutboundUrl(target.custom_host, fieldOf(input, target, 'custom_host'), trusted).href.replace(/\/+$/, '')
    : providerBase(provider, input, target);
  const url = new URL(base + path);
  url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:';
  if (provider.id === 'azure-openai') azureQuery(url, target, model);
  else url.searchParams.set('model', model);

  const headers: Record<string, string> = { 'user-agent': 'gantry', ...forwardedHeaders(input, target) };
  const beta = input.clientHeaders.get('openai-beta');
  if (beta) headers['openai-beta'] = beta;
  const key = target.api_key ?? clientKeyOf(input);
  if (key) {
    if (provider.auth.kind === 'bearer') headers.authorization = `Bearer ${key}`;
    else headers[provider.auth.header] = key;
  }
  for (const [option, header] of Object.entries(provider.optionHeaders ?? {})) {
    const value = target.options[option];
    if (typeof value === 'string' && value) headers[header] = value;
  }
  return { url, headers };
}

/** Azure OpenAI: `v1` takes the model like OpenAI; the preview path a deployment and an api-version. */
function azureQuery(url: URL, target: ResolvedTarget, model: string): void {
  const version = target.options.azure_api_version;
  if (version === 'v1') {
    url.pathname = url.pathname.replace(/\/realtime$/, '/v1/realtime');
    url.searchParams.set('model', model);
    return;
  }
  const deployment = target.options.azure_deployment_id;
  url.searchParams.set('api-version', typeof version === 'string' && version ? version : AZURE_REALTIME_API_VERSION);
  url.searchParams.set('deployment', typeof deployment === 'string' && deployment ? deployment : model);
}
