/** Gateway request headers that are not about routing, and which headers may reach a provider. */
import { ValidationError } from '../http/errors.ts';
import { tryParseJson } from '../http/json.ts';

const MAX_TIMEOUT_MS = 15 * 60 * 1000;

/** What Node's HTTP client refuses in a header value: control characters but tab (CR and LF among them), and anything past Latin-1. */
const UNSENDABLE = /[^\t\x20-\x7e\x80-\xff]/;

/** Whether a value can go into an HTTP header as it is. */
export const isSendable = (value: string): boolean => !UNSENDABLE.test(value);

/** The problem with a value that cannot (the value itself is never echoed: it is often a credential). */
export const UNSENDABLE_MESSAGE = 'must not contain line breaks, control characters or characters outside Latin-1';

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

/**
 * Never sent to a provider, whatever a client or config asks: the gateway's own headers, and the
 * connection-level ones the gateway's HTTP client sets itself.
 */
export const NEVER_FORWARDED = /^(x-gw-.*|host|content-length|connection|transfer-encoding|keep-alive|upgrade|te|trailer|proxy-.*)$/i;

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FORWARD_HEADER = 'x-gw-forward-headers';

/**
 * `x-gw-forward-headers`: a JSON array of header names or a comma-separated list, lower-cased.
 * `x-gw-*` names are dropped, as they are from a config's forward_headers.
 */
export function parseForwardHeaders(headers: Headers): string[] {
  const raw = headers.get(FORWARD_HEADER)?.trim();
  if (!raw) return [];
  let names: unknown[];
  if (raw.startsWith('[')) {
    const parsed = tryParseJson(raw);
    if (!parsed.ok || !Array.isArray(parsed.value))
      throw ValidationError.field(FORWARD_HEADER, 'must be a JSON array of header names or a comma-separated list');
    names = parsed.value;
  } else {
    names = raw
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n !== '');
  }
  const out: string[] = [];
  for (const name of names) {
    if (typeof name !== 'string' || !TOKEN.test(name)) {
      throw ValidationError.field(FORWARD_HEADER, `${JSON.stringify(name)} is not a header name`);
    }
    if (!NEVER_FORWARDED.test(name)) out.push(name.toLowerCase());
  }
  return out;
}

/**
 * Provider options a request may set as `x-gw-<option>` headers (docs/design/spec.md#cloud-and-provider-option-headers
 * and OpenAI's organisation and project), read into the target's options under their snake_case
 * names. A config target that sets the option itself keeps its own value.
 */
export const OPTION_HEADERS: Readonly<Record<string, string>> = {
  'x-gw-azure-resource-name': 'azure_resource_name',
  'x-gw-azure-deployment-id': 'azure_deployment_id',
  'x-gw-azure-api-version': 'azure_api_version',
  'x-gw-azure-model-name': 'azure_model_name',
  'x-gw-vertex-project-id': 'vertex_project_id',
  'x-gw-vertex-region': 'vertex_region',
  'x-gw-aws-access-key-id': 'aws_access_key_id',
  'x-gw-aws-secret-access-key': 'aws_secret_access_key',
  'x-gw-aws-region': 'aws_region',
  'x-gw-aws-session-token': 'aws_session_token',
  'x-gw-openai-organization': 'openai_organization',
  'x-gw-openai-project': 'openai_project',
  'x-gw-workers-ai-account-id': 'workers_ai_account_id',
};

/** Options that are credentials: never put in the record, logs or error messages. */
export const SECRET_OPTIONS: ReadonlySet<string> = new Set(['aws_access_key_id', 'aws_secret_access_key', 'aws_session_token']);

const NO_OPTIONS: Readonly<Record<string, string>> = Object.freeze({});
const OPTION_BY_HEADER: ReadonlyMap<string, string> = new Map(Object.entries(OPTION_HEADERS));

/**
 * The openai SDK's `organization` and `project` options, sent as OpenAI's own headers: the same
 * options as `x-gw-openai-organization`/`-project` (which win), sent on only by providers that
 * declare them (`optionHeaders`: OpenAI), never to others.
 */
const SDK_OPTION_HEADERS: ReadonlyMap<string, string> = new Map([
  ['openai-organization', 'openai_organization'],
  ['openai-project', 'openai_project'],
]);

/**
 * The provider options the request's headers set; empty (and shared) when none. One pass, however
 * many options exist. Each may become a provider's header: one that could not be sent is refused here.
 */
export function parseOptionHeaders(headers: Headers): Readonly<Record<string, string>> {
  let out: Record<string, string> | undefined;
  headers.forEach((value, name) => {
    if (value === '') return;
    const sdkOption = SDK_OPTION_HEADERS.get(name);
    const option = sdkOption ?? (name.startsWith('x-gw-') ? OPTION_BY_HEADER.get(name) : undefined);
    if (!option) return;
    if (!isSendable(value)) throw ValidationError.field(name, UNSENDABLE_MESSAGE);
    if (sdkOption) (out ??= {})[sdkOption] ??= value;
    else (out ??= {})[option] = value;
  });
  return out ?? NO_OPTIONS;
}

/** Gantry's own keys start with this; no provider issues such keys. */
export const GATEWAY_KEY_PREFIX = 'gw_';

/**
 * The openai SDK sends its `apiKey` as `Authorization: Bearer`. A `gw_` bearer is a gateway key,
 * never a provider's: it authenticates the caller when no `x-gw-api-key` (or `x-gw-jwt`) is sent,
 * and is removed either way, so it is never passed on nor taken for a provider key. The provider's
 * key then comes from a managed provider, a virtual key or a config.
 */
export function gatewayKeyFromBearer(headers: Headers): Headers {
  const bearer = headers.get('authorization')?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  if (!bearer?.startsWith(GATEWAY_KEY_PREFIX)) return headers;
  const moved = new Headers(headers);
  moved.delete('authorization');
  if (!moved.get('x-gw-api-key') && !moved.get('x-gw-jwt')) moved.set('x-gw-api-key', bearer);
  return moved;
}
