/**
 * Calls one resolved target: finds its provider, builds the URL (custom hosts SSRF-checked; path
 * parameters encoded into the provider's template; the client's query string kept), the headers
 * (from scratch on unified endpoints, so no `x-gw-*` header and no gateway key can leave; the
 * client's own on the passthrough, minus those) and the body (`override_params` merged over a
 * JSON body; multipart and raw bodies byte for byte), and sends it with the per-attempt timeout.
 * Native-format providers (Anthropic, Bedrock, Gemini ...) go through their transforms instead,
 * which are imported on first use: OpenAI-wire traffic and the cold start never load them.
 */
import { readCapped } from '../http/node-streams.ts';
import { NotFoundError, UpstreamError, ValidationError } from '../http/errors.ts';
import type { Clock } from '../ports/clock.ts';
import { findProvider, providerIds } from '../providers/registry.ts';
import { applyRequestMap } from '../providers/request-map.ts';
import type { FetchCredentials } from '../providers/transform.ts';
import type { EndpointType, ProviderDefinition } from '../providers/types.ts';
import { outboundBaseUrl, type TrustedHosts } from '../security/ssrf.ts';
import { isSendable, NEVER_FORWARDED, UNSENDABLE_MESSAGE } from './headers.ts';
import { fillPath } from './paths.ts';
import type { ProviderRequestBody } from './request-body.ts';
import type { Attempt, TargetCaller } from './routing/execute.ts';
import type { ResolvedTarget } from '../kernel/routing.ts';
import type { Upstream } from '../ports/upstream.ts';
import { readProvider } from './respond.ts';
import { targetSecrets } from './scrub-sent.ts';

export interface CallInput {
  endpoint: EndpointType;
  method: string;
  body: ProviderRequestBody;
  /** Checked path parameters, filled into the provider's path template. */
  params: Readonly<Record<string, string>>;
  /**
   * Appended to the endpoint's template (the assistants family: `/threads/{thread_id}/runs`); for
   * the passthrough, the client's whole path below `/v1`, already encoded and checked.
   */
  subPath?: string;
  /** The client's query string (`?limit=2`), or ''. */
  search: string;
  clientHeaders: Headers;
  /** Header names sent on as they are: `x-gw-forward-headers` and the endpoint's own. */
  forwardHeaders: readonly string[];
  /** `x-gw-request-timeout`: wins over the config's `request_timeout`. */
  headerTimeoutMs?: number | undefined;
  /** True when the target came from headers rather than a config: errors name the headers. */
  fromHeaders: boolean;
  /** The request's log id (native providers use it as the id of objects they do not name). */
  requestId?: string;
  /** Multipart endpoints: the form's text fields (a native provider reads the model there). */
  fields?: Readonly<Record<string, unknown>>;
  /** The client's provider key when it is not in `Authorization` (Anthropic's `x-api-key` on /v1/messages). */
  providerKey?: string | undefined;
  /** Called with the usage of a native provider's answer once known, streamed or not. */
  onUsage?: ((usage: NativeUsage) => void) | undefined;
}

/** What a native provider's answer reported (OpenAI's usage shape). */
export interface NativeUsage {
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details?: { cached_tokens?: number };
    completion_tokens_details?: { reasoning_tokens?: number };
  };
  model?: string | undefined;
}

export interface CallerDeps {
  upstream: Upstream;
  trustedHosts: TrustedHosts;
  clock: Clock;
  /**
   * Assumes an integration's `aws_role_arn` with the gateway's own credentials; defaults to STS
   * with the runtime's credential chain. Never used for roles a request names itself.
   */
  assumeRole?: FetchCredentials | undefined;
}

type NativeModule = typeof import('../providers/native/index.ts');
let nativeModule: Promise<NativeModule> | undefined;

/** The native providers' transforms, imported once, on first use. */
export const loadNative = (): Promise<NativeModule> => (nativeModule ??= import('../providers/native/index.ts'));

const field = (input: CallInput, target: ResolvedTarget, key: 'provider' | 'custom_host') =>
  input.fromHeaders ? (key === 'provider' ? 'x-gw-provider' : 'x-gw-custom-host') : `${target.path}.${key}`;

function template(provider: ProviderDefinition, endpoint: EndpointType, input: CallInput, target: ResolvedTarget): string {
  const path = provider.endpoints[endpoint];
  if (path === undefined) {
    throw ValidationError.field(field(input, target, 'provider'), `provider ${provider.id} does not support the ${endpoint} endpoint`);
  }
  return path;
}

export function resolveProvider(target: ResolvedTarget, input: CallInput): { provider: ProviderDefinition; path: string } {
  const id = target.provider;
  if (!id) {
    throw ValidationError.field(field(input, target, 'provider'), 'is required: name a provider (e.g. openai) or send x-gw-config');
  }
  const provider = findProvider(id);
  if (!provider) {
    throw ValidationError.field(field(input, target, 'provider'), `unknown provider "${id}"; known: ${providerIds().join(', ')}`);
  }
  // Every provider can be reached through the passthrough: its base URL is all it takes.
  if (input.endpoint === 'proxy') return { provider, path: input.subPath ?? '' };
  // Built from two calls (see batchOutput): the provider needs those, not a path of its own.
  if (input.endpoint === 'getBatchOutput') {
    if (provider.endpoints.retrieveBatch === undefined || provider.endpoints.retrieveFileContent === undefined) {
      throw ValidationError.field(
        field(input, target, 'provider'),
        `provider ${provider.id} does not support the getBatchOutput endpoint (it needs retrieveBatch and retrieveFileContent)`,
      );
    }
    return { provider, path: '' };
  }
  const path = template(provider, input.endpoint, input, target) + (input.subPath ?? '');
  return { provider, path: fillPath(path, input.params) };
}

/** The body a target's provider receives (JSON endpoints): the client's, with the target's override_params over it. */
export function providerBody(input: CallInput, target: ResolvedTarget): Record<string, unknown> {
  if (input.body.kind !== 'json') return {};
  const overrides = target.override_params;
  return Object.keys(overrides).length ? { ...input.body.value, ...overrides } : input.body.value;
}

/** The client's own text whenever neither override_params nor the provider's request map change the body. */
function bytesToSend(input: CallInput, target: ResolvedTarget, provider: ProviderDefinition): string | Uint8Array | undefined {
  const body = input.body;
  if (body.kind === 'json') {
    const mapped = applyRequestMap(provider, input.endpoint, providerBody(input, target));
    return mapped === body.value ? body.text : JSON.stringify(mapped);
  }
  return body.kind === 'raw' ? body.bytes : undefined;
}

/** The provider key for a target: its own `api_key`, else the client's `Authorization: Bearer`. */
export function bearerKey(headers: Headers): string | undefined {
  return headers
    .get('authorization')
    ?.match(/^Bearer\s+(.+)$/i)?.[1]
    ?.trim();
}

/** The client's own provider key: `Authorization: Bearer`, else one a dialect found elsewhere. */
export const clientKeyOf = (input: CallInput): string | undefined => bearerKey(input.clientHeaders) ?? input.providerKey;

function copyListed(names: readonly string[] | undefined, from: Headers, to: Record<string, string>): void {
  if (!names) return;
  for (const name of names) {
    const value = from.get(name);
    if (value !== null && !NEVER_FORWARDED.test(name)) to[name.toLowerCase()] = value;
  }
}

/** Unified endpoints: headers built from scratch; only listed client headers are copied. */
function unifiedHeaders(input: CallInput, target: ResolvedTarget): Record<string, string> {
  const headers: Record<string, string> = { 'user-agent': 'gantry' };
  if (input.body.kind === 'json') headers['content-type'] = 'application/json';
  else if (input.body.kind === 'raw' && input.body.contentType) headers['content-type'] = input.body.contentType;
  copyListed(target.forward_headers, input.clientHeaders, headers);
  copyListed(input.forwardHeaders, input.clientHeaders, headers);
  return headers;
}

/** The passthrough: every client header meant for the provider, never a gateway one or the gateway key. */
function passthroughHeaders(input: CallInput): Record<string, string> {
  const headers: Record<string, string> = {};
  const gatewayKey = input.clientHeaders.get('x-gw-api-key');
  input.clientHeaders.forEach((value, name) => {
    if (!NEVER_FORWARDED.test(name) && !(gatewayKey && value.includes(gatewayKey))) headers[name] = value;
  });
  return headers;
}

function authenticate(headers: Record<string, string>, provider: ProviderDefinition, key: string | undefined, own: boolean, passthrough: boolean): void {
  if (!key) return;
  // On the passthrough the client's own Authorization goes as it is, unless the config has a key.
  if (provider.auth.kind === 'bearer') {
    if (!passthrough || own) headers.authorization = `Bearer ${key}`;
  } else if (!passthrough || own || headers[provider.auth.header] === undefined) {
    headers[provider.auth.header] = key;
  }
}

/** Where a target's provider option came from: its `x-gw-<option>` header, or the config. */
function optionField(input: CallInput, target: ResolvedTarget, option: string): string {
  const header = `x-gw-${option.replace(/_/g, '-')}`;
  return input.fromHeaders || input.clientHeaders.get(header) === target.options[option] ? header : `${target.path}.${option}`;
}

/**
 * A header the upstream client could not send (`unsendableHeader`: a line break, a control
 * character, a character past Latin-1), named by the input it came from: the target's key, the
 * client's own key, a provider option; else the client header of that name (forwarded or passed through).
 */
function nameUnsendable(err: unknown, input: CallInput, target: ResolvedTarget): never {
  const problem = err instanceof ValidationError && err.problems.length === 1 ? err.problems[0] : undefined;
  if (problem?.message !== UNSENDABLE_MESSAGE) throw err;
  throw ValidationError.field(unsendableSource(input, target) ?? problem.path, UNSENDABLE_MESSAGE);
}

/** A managed provider's or virtual key's values are the administrator's: the field says so. */
const STORED = ' (stored with the managed provider or virtual key)';

function unsendableSource(input: CallInput, target: ResolvedTarget): string | undefined {
  const stored = target.managed ? STORED : '';
  if (target.api_key !== undefined && !isSendable(target.api_key)) return `${target.path}.api_key${stored}`;
  const bearer = bearerKey(input.clientHeaders);
  if (bearer !== undefined && !isSendable(bearer)) return 'authorization';
  if (input.providerKey !== undefined && !isSendable(input.providerKey)) return 'x-api-key';
  for (const [option, value] of Object.entries(target.options)) {
    if (typeof value === 'string' && !isSendable(value)) return target.managed ? `${target.path}.${option}${stored}` : optionField(input, target, option);
  }
  return undefined;
}

/** What a base URL part may be: one path segment or host label, never a dot segment. */
const BASE_PART = /^[A-Za-z0-9_-]{1,128}$/;

/** A base URL with `{option}` parts (Workers AI's account id) takes them from the target's provider options. */
export function providerBase(provider: ProviderDefinition, input: CallInput, target: ResolvedTarget): string {
  if (!provider.baseUrl.includes('{')) return provider.baseUrl;
  return provider.baseUrl.replace(/\{([a-z0-9_]+)\}/g, (_, option: string) => {
    const value = target.options[option];
    const where = optionField(input, target, option);
    if (typeof value !== 'string' || value === '') throw ValidationError.field(where, `is required for ${provider.id}, whose base URL is ${provider.baseUrl}`);
    if (!BASE_PART.test(value)) throw ValidationError.field(where, 'must be 1 to 128 letters, digits, "-" or "_"');
    return value;
  });
}

export function createTargetCaller(deps: CallerDeps, input: CallInput): TargetCaller {
  const clientKey = clientKeyOf(input);
  const passthrough = input.endpoint === 'proxy';
  return async (target, signal): Promise<Attempt> => {
    const declared = target.provider ? findProvider(target.provider) : undefined;
    if (declared?.native) return callNativeTarget(deps, input, target, declared, signal);
    const { provider, path } = resolveProvider(target, input);
    if (provider.requiresCustomHost && !target.custom_host) {
      throw ValidationError.field(
        field(input, target, 'custom_host'),
        `is required for ${provider.id}, which runs on your own machine or cluster (its default address is ${provider.baseUrl})`,
      );
    }
    const base = target.custom_host
      ? outboundBaseUrl(target.custom_host, field(input, target, 'custom_host'), deps.trustedHosts)
      : providerBase(provider, input, target);

    const headers = passthrough ? passthroughHeaders(input) : unifiedHeaders(input, target);
    authenticate(headers, provider, target.api_key ?? clientKey, target.api_key !== undefined, passthrough);
    if (provider.optionHeaders) {
      for (const [option, header] of Object.entries(provider.optionHeaders)) {
        const value = target.options[option];
        if (typeof value === 'string' && value) headers[header] = value;
      }
    }

    const timeoutMs = input.headerTimeoutMs ?? target.request_timeout;
    if (input.endpoint === 'getBatchOutput') {
      return batchOutput(deps, { provider, base, headers, input, target, timeoutMs, signal });
    }
    const res = await deps.upstream
      .send({
        url: new URL(base + path + input.search),
        method: input.method,
        headers,
        body: bytesToSend(input, target, provider),
        timeoutMs,
        signal,
        secrets: targetSecrets(target, clientKey),
      })
      .catch((err: unknown) => nameUnsendable(err, input, target));
    return { status: res.status, headers: res.headers, body: res.body };
  };
}

/**
 * Adds the provider options a request set in headers (x-gw-azure-resource-name ...) to each target
 * it calls, where the target does not set its own. Outermost, so every wrapper sees them.
 */
export function withRequestOptions(inner: TargetCaller, options: Readonly<Record<string, string>>): TargetCaller {
  const names = Object.keys(options);
  if (names.length === 0) return inner;
  return (target, signal) => {
    // A managed provider's options (Azure resource, AWS region ...) are the administrator's: a
    // request header must not point its stored key somewhere else.
    if (target.managed) return inner(target, signal);
    const merged = { ...target.options };
    for (const name of names) if (merged[name] === undefined) merged[name] = options[name];
    return inner({ ...target, options: merged }, signal);
  };
}

interface BatchOutputCall {
  provider: ProviderDefinition;
  base: string;
  headers: Record<string, string>;
  input: CallInput;
  target: ResolvedTarget;
  timeoutMs: number | undefined;
  signal: AbortSignal | undefined;
}

const MAX_BATCH_JSON = 1 << 20;

/**
 * OpenAI-wire providers have no "batch output" call: it is the batch's output file. The batch is
 * read first (a failure answers as the provider's), then its output file's content is streamed.
 * Each of the two calls has the request timeout.
 */
async function batchOutput(deps: CallerDeps, c: BatchOutputCall): Promise<Attempt> {
  const batchPath = fillPath(template(c.provider, 'retrieveBatch', c.input, c.target), c.input.params);
  const contentTemplate = template(c.provider, 'retrieveFileContent', c.input, c.target);
  const secrets = [...targetSecrets(c.target, clientKeyOf(c.input))];
  const send = (url: URL) =>
    deps.upstream
      .send({ url, method: 'GET', headers: c.headers, timeoutMs: c.timeoutMs, signal: c.signal, secrets })
      .catch((err: unknown) => nameUnsendable(err, c.input, c.target));
  const first = await send(new URL(c.base + batchPath));
  if (first.status < 200 || first.status >= 300) return { status: first.status, headers: first.headers, body: first.body };

  const read = await readProvider(readCapped(first.body, MAX_BATCH_JSON));
  if (read.truncated) throw new UpstreamError(502, 'The provider answered the batch with an oversized body');
  let batch: { output_file_id?: unknown; status?: unknown };
  try {
    batch = JSON.parse(read.bytes.toString('utf8')) as typeof batch;
  } catch {
    throw new UpstreamError(502, 'The provider answered the batch with a body that is not JSON');
  }
  if (typeof batch.output_file_id !== 'string' || batch.output_file_id === '') {
    throw new NotFoundError(`Batch ${c.input.params.batch_id} has no output file yet (status: ${String(batch.status ?? 'unknown')})`, {
      param: 'batch_id',
      openaiCode: 'batch_output_not_ready',
    });
  }
  const contentPath = fillPath(contentTemplate, { file_id: batch.output_file_id });
  const res = await send(new URL(c.base + contentPath));
  return { status: res.status, headers: res.headers, body: res.body };
}

// ---- Native-format providers -------------------------------------------------------------------

/** Endpoints whose bodies and answers the native transforms translate (the rest go byte for byte). */
const TRANSLATED: ReadonlySet<EndpointType> = new Set(['chatComplete', 'complete', 'embed', 'rerank', 'imageGenerate']);

/** Options a request may still set for a managed target: they choose a format, not where its key goes. */
const HARMLESS_HEADER_OPTIONS = ['anthropic_version', 'anthropic_beta'] as const;

/** The integration's options, with the configuration names the native modules read. */
function managedOptions(options: Readonly<Record<string, unknown>>, headers: Headers): Record<string, unknown> {
  const out: Record<string, unknown> = { ...options };
  // Azure AI Foundry integrations store their endpoint as azure_foundry_url.
  if (out.azure_endpoint === undefined && typeof out.azure_foundry_url === 'string') out.azure_endpoint = out.azure_foundry_url;
  for (const key of HARMLESS_HEADER_OPTIONS) {
    const value = headers.get(`x-gw-${key.replace(/_/g, '-')}`);
    if (out[key] === undefined && value) out[key] = value;
  }
  return out;
}

/** The client headers a config or request lists for forwarding (native and dialect calls). */
export function forwardedHeaders(input: CallInput, target: ResolvedTarget): Record<string, string> {
  const headers: Record<string, string> = {};
  copyListed(target.forward_headers, input.clientHeaders, headers);
  copyListed(input.forwardHeaders, input.clientHeaders, headers);
  return headers;
}

/** What every call to a native provider needs: its module, request context, base URL and timeout. */
export interface NativeSetup {
  native: NativeModule;
  provider: NonNullable<ReturnType<NativeModule['findNativeProvider']>>;
  ctx: ReturnType<NativeModule['nativeContext']>;
  /** The target's custom host (SSRF-checked), else the provider's own base URL. */
  base: string | undefined;
  timeoutMs: number | undefined;
}

/**
 * A native provider's options (the target's, completed by `x-gw-<option>` headers unless the
 * target is managed), key and context for `body`. `clientVersion`: the client's
 * `anthropic-version` is the default (the passthrough, a request in Anthropic's own format).
 * Role assumption with the gateway's own credentials only for managed targets.
 */
export async function prepareNative(
  deps: CallerDeps,
  input: CallInput,
  target: ResolvedTarget,
  declared: ProviderDefinition,
  body: Readonly<Record<string, unknown>>,
  clientVersion: boolean,
): Promise<NativeSetup> {
  const base = target.custom_host ? outboundBaseUrl(target.custom_host, field(input, target, 'custom_host'), deps.trustedHosts) : undefined;
  const native = await loadNative();
  const provider = native.findNativeProvider(declared.id);
  if (!provider) throw new UpstreamError(500, `provider ${declared.id} has no native module`);
  const options = target.managed ? managedOptions(target.options, input.clientHeaders) : native.nativeOptions(target.options, input.clientHeaders);
  const version = input.clientHeaders.get('anthropic-version');
  if (clientVersion && version && options.anthropic_version === undefined) options.anthropic_version = version;
  const ctx = native.nativeContext({
    body,
    options,
    apiKey: target.api_key ?? clientKeyOf(input),
    strictOpenAICompliance: target.strict_openai_compliance,
    clock: deps.clock,
    requestId: input.requestId ?? 'gantry',
    fetchCredentials: target.managed ? (deps.assumeRole ?? native.runtimeAssumeRole({ clock: deps.clock })) : undefined,
  });
  return { native, provider, ctx, base, timeoutMs: input.headerTimeoutMs ?? target.request_timeout };
}

/** The body a native provider's transform starts from: the JSON body, or a form's fields, with override_params. */
function nativeBody(input: CallInput, target: ResolvedTarget): Readonly<Record<string, unknown>> {
  return input.body.kind === 'json' ? providerBody(input, target) : { ...input.fields, ...target.override_params };
}

/** One call to a native-format provider: the OpenAI body translated, the answer translated back. */
async function callNativeTarget(
  deps: CallerDeps,
  input: CallInput,
  target: ResolvedTarget,
  declared: ProviderDefinition,
  signal: AbortSignal | undefined,
): Promise<Attempt> {
  const endpoint = input.endpoint;
  const passthrough = endpoint === 'proxy';
  if (!passthrough && declared.endpoints[endpoint] === undefined) {
    throw ValidationError.field(field(input, target, 'provider'), `provider ${declared.id} does not support the ${endpoint} endpoint`);
  }
  const { native, provider, ctx, base, timeoutMs } = await prepareNative(deps, input, target, declared, nativeBody(input, target), passthrough);
  // Whatever the transform derives from them (a signature, a session token) is on the request itself.
  const secrets = [...targetSecrets(target, clientKeyOf(input))];
  const send = (r: Parameters<Upstream['send']>[0]) =>
    deps.upstream.send({ ...r, secrets: r.secrets ? [...r.secrets, ...secrets] : secrets }).catch((err: unknown) => nameUnsendable(err, input, target));
  const common = { provider, endpoint, ctx, send, baseUrl: base, timeoutMs, signal };
  if (passthrough) {
    const headers = passthroughHeaders(input);
    // The key goes in the provider's own format.
    if (ctx.apiKey !== undefined) delete headers.authorization;
    const res = await native.callNativeRaw({
      ...common,
      headers,
      path: (input.subPath ?? '') + input.search,
      method: input.method,
      body: input.body.kind === 'raw' ? input.body.bytes : input.body.kind === 'json' ? input.body.text : undefined,
    });
    return { status: res.status, headers: res.headers, body: res.body };
  }
  const translated = input.body.kind === 'json' && TRANSLATED.has(endpoint) && !(ctx.stream && endpoint !== 'chatComplete' && endpoint !== 'complete');
  if (!translated) {
    const res = await native.callNativeRaw({
      ...common,
      headers: forwardedHeaders(input, target),
      body: input.body.kind === 'json' ? JSON.stringify(ctx.request) : input.body.kind === 'raw' ? input.body.bytes : undefined,
      contentType: input.body.kind === 'json' ? 'application/json' : input.body.kind === 'raw' ? input.body.contentType : undefined,
    });
    return { status: res.status, headers: res.headers, body: res.body };
  }
  const onUsage = input.onUsage;
  const res = await native.callNative({
    ...common,
    headers: forwardedHeaders(input, target),
    onOutcome: onUsage ? (o) => o.usage && onUsage({ usage: o.usage, model: o.model }) : undefined,
  });
  return { status: res.status, headers: res.headers, body: res.body };
}
