/**
 * The one error hierarchy. Every failure the service reports is a GantryError carrying its HTTP
 * status and admin code; `toAdminBody` and `toOpenAIBody` are the only places errors become bodies,
 * and `toResponse` (http/error-response.ts) the one place they become responses.
 */

/** Admin error codes (docs/design/spec.md#error-codes). */
export type AdminErrorCode = 'AB01' | 'AB02' | 'AB03' | 'AB04' | 'AB05' | 'AB06' | 'AB07' | 'AB08' | 'AB09';

/** One field-level problem: `path` uses dotted/bracket notation, e.g. `targets[1].weight`. */
export interface FieldProblem {
  path: string;
  message: string;
}

export interface GantryErrorOptions {
  /** The request field at fault (OpenAI's `param`). */
  param?: string | null;
  /** OpenAI error `code` (e.g. `invalid_api_key`). */
  openaiCode?: string | null;
  /** Field-level problems (admin `errors`). */
  problems?: FieldProblem[];
  /** Extra response headers (e.g. `retry-after`). */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class GantryError extends Error {
  readonly status: number;
  readonly code: AdminErrorCode;
  /** OpenAI error `type`. */
  readonly type: string;
  readonly param: string | null;
  readonly openaiCode: string | null;
  readonly problems: FieldProblem[];
  readonly headers: Record<string, string>;

  constructor(status: number, code: AdminErrorCode, type: string, message: string, opts: GantryErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.type = type;
    this.param = opts.param ?? null;
    this.openaiCode = opts.openaiCode ?? null;
    this.problems = opts.problems ?? [];
    this.headers = opts.headers ?? {};
  }
}

/** 400 AB01: bad input. With problems, the message lists every one of them. */
export class ValidationError extends GantryError {
  constructor(problems: FieldProblem[], opts: Omit<GantryErrorOptions, 'problems'> = {}) {
    const message = problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('; ');
    super(400, 'AB01', 'invalid_request_error', message || 'Invalid request', {
      // An explicit `param: null` (e.g. unparsable JSON) names no field.
      param: 'param' in opts ? (opts.param ?? null) : problems[0]?.path || null,
      openaiCode: opts.openaiCode ?? 'invalid_value',
      ...(opts.headers ? { headers: opts.headers } : {}),
      ...(opts.cause !== undefined ? { cause: opts.cause } : {}),
      problems,
    });
  }

  static field(path: string, message: string): ValidationError {
    return new ValidationError([{ path, message }]);
  }
}

export class AuthenticationError extends GantryError {
  constructor(message = 'Invalid API key', opts: GantryErrorOptions = {}) {
    super(401, 'AB05', 'authentication_error', message, { openaiCode: 'invalid_api_key', ...opts });
  }
}

export class ForbiddenError extends GantryError {
  constructor(message: string, opts: GantryErrorOptions = {}) {
    super(403, 'AB03', 'permission_error', message, { openaiCode: 'forbidden', ...opts });
  }
}

export class NotFoundError extends GantryError {
  constructor(message: string, opts: GantryErrorOptions = {}) {
    super(404, 'AB08', 'not_found_error', message, { openaiCode: 'not_found', ...opts });
  }
}

export class RouteNotFoundError extends GantryError {
  /** `meant`: the path a mistyped one most likely meant, suggested in the message. */
  constructor(method: string, path: string, meant?: string) {
    super(404, 'AB02', 'not_found_error', `No route for ${method} ${path}${meant ? `; did you mean ${meant}?` : ''}`, { openaiCode: 'route_not_found' });
  }
}

export class ConflictError extends GantryError {
  constructor(message: string, opts: GantryErrorOptions = {}) {
    super(409, 'AB07', 'conflict_error', message, { openaiCode: 'conflict', ...opts });
  }
}

export class RateLimitedError extends GantryError {
  constructor(message: string, opts: GantryErrorOptions = {}) {
    super(429, 'AB06', 'rate_limit_error', message, { openaiCode: 'rate_limit_exceeded', ...opts });
  }
}

export class UsageExhaustedError extends GantryError {
  constructor(message: string, opts: GantryErrorOptions = {}) {
    super(402, 'AB09', 'budget_exhausted', message, { openaiCode: 'budget_exhausted', ...opts });
  }
}

/** 413: a request body over its endpoint's limit, refused from its Content-Length or while it is read. */
export class PayloadTooLargeError extends GantryError {
  constructor(limitBytes: number) {
    super(413, 'AB01', 'invalid_request_error', `The request body is larger than this endpoint's limit of ${formatBytes(limitBytes)}`, {
      openaiCode: 'request_too_large',
      param: null,
    });
  }
}

const formatBytes = (n: number): string => (n >= 1 << 20 ? `${Math.round(n / (1 << 20))} MiB` : `${Math.round(n / 1024)} KiB`);

/** 408: the provider did not send response headers within the request timeout. */
export class RequestTimeoutError extends GantryError {
  constructor(timeoutMs: number) {
    super(408, 'AB04', 'timeout_error', `Request exceeded the timeout of ${timeoutMs} ms`, {
      openaiCode: 'request_timeout',
    });
  }
}

/** 502/503/504: the provider could not be reached or answered unusably. */
export class UpstreamError extends GantryError {
  constructor(status: number, message: string, opts: GantryErrorOptions = {}) {
    super(status, 'AB04', 'api_error', message, { openaiCode: 'upstream_error', ...opts });
  }
}

/**
 * 503: a dependency of the service (the database) is unavailable, or a feature lacks the setting it
 * needs. With `retryAfterSeconds` the answer carries `Retry-After`.
 */
export class ServiceUnavailableError extends GantryError {
  constructor(message: string, opts: GantryErrorOptions & { retryAfterSeconds?: number } = {}) {
    const { retryAfterSeconds, ...rest } = opts;
    const headers = retryAfterSeconds === undefined ? rest.headers : { ...rest.headers, 'retry-after': String(retryAfterSeconds) };
    super(503, 'AB04', 'service_unavailable', message, { openaiCode: 'service_unavailable', ...rest, ...(headers ? { headers } : {}) });
  }
}

export class InternalError extends GantryError {
  constructor(message = 'Internal server error', opts: GantryErrorOptions = {}) {
    super(500, 'AB04', 'api_error', message, { openaiCode: 'internal_error', ...opts });
  }
}

/** Seconds a client is told to wait when a dependency is unavailable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** Errors of AWS SDK calls (DynamoDB, KMS, S3 ...) that mean "unavailable or too slow", not "wrong". */
const UNAVAILABLE_NAMES = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'KMSInternalException',
]);
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** An AWS SDK call (it carries `$metadata`) that failed because the service was down, hanging or throttling. */
export function isDependencyUnavailable(err: unknown): err is Error {
  if (!(err instanceof Error) || !('$metadata' in err)) return false;
  const code = (err as { code?: unknown }).code;
  const status = (err.$metadata as { httpStatusCode?: number } | undefined)?.httpStatusCode;
  return UNAVAILABLE_NAMES.has(err.name) || (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) || (status !== undefined && status >= 500);
}

/**
 * Anything thrown that is not a GantryError: 503 with Retry-After when a dependency (the database)
 * is unavailable, else a 500 without leaking its message.
 */
export function asGantryError(err: unknown): GantryError {
  if (err instanceof GantryError) return err;
  if (isDependencyUnavailable(err)) {
    const what = (err as { code?: unknown }).code ?? err.name;
    return new ServiceUnavailableError(`The service's storage is unavailable or did not answer in time (${String(what)}); retry in a few seconds`, {
      retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS,
      cause: err,
    });
  }
  return new InternalError('Internal server error', { cause: err });
}

export interface AdminErrorBody {
  object: 'error';
  errorCode: AdminErrorCode;
  message: string;
  errors: FieldProblem[];
}

/** Quoted values (ids, slugs, names the client sent) longer than this are shortened in answers. */
export const MAX_QUOTED_CHARS = 80;
const LONG_QUOTE = new RegExp(`"([^"]{${MAX_QUOTED_CHARS + 1},})"`, 'g');
/** Unquoted, a value is a run without spaces: none in a message of ours is this long. */
const LONG_WORD = new RegExp(`[^\\s"]{${MAX_QUOTED_CHARS + 1},}`, 'g');

/**
 * A message with every quoted value (or run without spaces) over MAX_QUOTED_CHARS cut to its start: an error names what the
 * client sent, never echoes kilobytes of it (a pasted secret, a fuzzed header) into answers and logs.
 */
export function clipQuoted(message: string): string {
  return message
    .replace(LONG_QUOTE, (_, v: string) => `"${v.slice(0, 40)}…" (${v.length} characters)`)
    .replace(LONG_WORD, (v) => `${v.slice(0, 40)}… (${v.length} characters)`);
}

const clipProblems = (problems: FieldProblem[]): FieldProblem[] =>
  problems.map((p) => ({ path: p.path.length > MAX_QUOTED_CHARS ? `${p.path.slice(0, 40)}…` : p.path, message: clipQuoted(p.message) }));

export function toAdminBody(err: GantryError): AdminErrorBody {
  return { object: 'error', errorCode: err.code, message: clipQuoted(err.message), errors: clipProblems(err.problems) };
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null; errors?: FieldProblem[] };
}

/** OpenAI's shape; several problems are also listed one by one in `errors` (clients ignore it). */
export function toOpenAIBody(err: GantryError): OpenAIErrorBody {
  const body: OpenAIErrorBody = { error: { message: clipQuoted(err.message), type: err.type, param: err.param, code: err.openaiCode } };
  if (err.problems.length > 1) body.error.errors = clipProblems(err.problems);
  return body;
}
