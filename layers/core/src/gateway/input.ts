/**
 * The request's input, read once the caller is known: path parameters checked, the body read as
 * the endpoint takes it (and, in a dialect, translated into OpenAI's format), validated, completed
 * with its defaults (docs/design/spec.md#defaults-gantry-fills-in), and noted in the record with the request's metadata.
 */
import type { EndpointSpec } from './endpoint.ts';
import { ValidationError } from '../http/errors.ts';
import { tryParseJson } from '../http/json.ts';
import type { DialectRequest } from './dialect.ts';
import type { Flight } from './flight.ts';
import type { GatewayRecord } from '../kernel/lifecycle.ts';
import { checkPathParams, checkProxyPath } from './paths.ts';
import { readRequestBody, type ProviderRequestBody } from './request-body.ts';

/** What the router found in the path. */
export interface RouteMatch {
  /** Path parameters, percent-decoded. */
  params?: Readonly<Record<string, string>>;
  /** The passthrough: the client's path below `/v1`, as encoded, already checked. */
  proxyPath?: string;
}

export interface Input {
  body: ProviderRequestBody;
  /** Checked path parameters. */
  params: Readonly<Record<string, string>>;
  /** Below the provider's template: the endpoint family's path, or the passthrough's whole path. */
  subPath: string | undefined;
  /** What routing conditions see as `params.*`: the JSON body, or a form's (or raw JSON's) fields. */
  fields: Readonly<Record<string, unknown>>;
  /** Raw bodies with fields (multipart): the fields a native provider reads the model from. */
  rawFields: Readonly<Record<string, unknown>> | undefined;
  /** The request in a dialect, once translated. */
  dialect: DialectRequest | undefined;
}

const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

export async function readInput(f: Flight, req: Request, route: RouteMatch): Promise<Input> {
  const { spec, record } = f;
  const params = spec.params ? checkPathParams(spec.params, route.params ?? NO_PARAMS) : NO_PARAMS;
  const proxyPath = route.proxyPath === undefined ? undefined : checkProxyPath(route.proxyPath);
  const read = f.body ?? (await readRequestBody(spec.body, req, spec.optionalBody, spec.maxBodyBytes));
  if (read.params) {
    noteRequest(record, read.params, spec);
    // Multipart fields are text: `stream=true` there.
    record.stream = spec.stream === true && (read.params.stream === true || read.params.stream === 'true');
  }
  // The key's default metadata, with the request's own values winning.
  record.metadata = { ...record.principal?.defaults?.metadata, ...parseMetadata(f.headers) };
  // `_prompt` (docs/design/spec.md#request-headers) names the prompt a request was rendered from: the gateway's word, not the client's.
  if (record.prompt) record.metadata._prompt = record.prompt.slug;
  let body = read.body;
  let dialect: DialectRequest | undefined;
  if (f.dialect && body.kind === 'json') {
    dialect = f.dialect.translate(body.value, body.text);
    body = { kind: 'json', text: JSON.stringify(dialect.openai), value: dialect.openai };
  }
  if (body.kind === 'json') {
    spec.validate?.(body.value);
    body = withDefaults(body, spec.defaults);
    if (body.kind === 'json' && body.value !== read.params) noteRequest(record, body.value, spec);
  } else if (read.form) {
    spec.validateForm?.(read.form);
  }
  return {
    body,
    params,
    subPath: spec.path ?? proxyPath,
    fields: body.kind === 'json' ? body.value : (read.params ?? {}),
    rawFields: body.kind === 'raw' ? read.params : undefined,
    dialect,
  };
}

function noteRequest(record: GatewayRecord, request: Record<string, unknown>, spec: EndpointSpec): void {
  record.request = request;
  const model = spec.modelOf ? spec.modelOf(request) : request.model;
  if (typeof model === 'string') record.model = model;
}

function parseMetadata(headers: Headers): Record<string, unknown> {
  const raw = headers.get('x-gw-metadata');
  if (raw === null) return {};
  const parsed = tryParseJson(raw);
  if (!parsed.ok || parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) {
    throw ValidationError.field('x-gw-metadata', 'must be a JSON object');
  }
  return parsed.value as Record<string, unknown>;
}

/** A JSON body with its endpoint's defaults (docs/design/spec.md#defaults-gantry-fills-in) for the fields the client left out; unchanged when none apply. */
function withDefaults(body: ProviderRequestBody, defaults: Readonly<Record<string, unknown>> | undefined): ProviderRequestBody {
  if (!defaults || body.kind !== 'json') return body;
  let value: Record<string, unknown> | undefined;
  for (const [name, fallback] of Object.entries(defaults)) {
    if (body.value[name] === undefined) (value ??= { ...body.value })[name] = fallback;
  }
  return value ? { kind: 'json', text: JSON.stringify(value), value } : body;
}
