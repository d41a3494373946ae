/**
 * A lean client for AWS's JSON protocols (DynamoDB's awsJson1_0, SQS's JSON protocol), for the calls
 * a warm gateway request makes: the limit counter's UpdateItem and the log queue's SendMessageBatch.
 *
 * Why not the AWS SDK there: its middleware stack, schema serde and signer cost about 1 ms of CPU per
 * call in Lambda (the performance issue's profile), a third of a warm request. This client does what
 * the SDK does on that path and nothing else: one POST of a JSON body over node:http(s) with a
 * keep-alive agent, signed by the SDK's own SigV4 signer (`@smithy/signature-v4`, hashing with
 * node:crypto), the SDK's timeouts (`requestTimeout`, `connectionTimeout`,
 * both failing with a `TimeoutError`), its standard retry mode (attempts, exponential backoff with
 * full jitter, a retry quota; throttling, 500/502/503/504 and network errors), and errors named and
 * shaped as the SDK's (`name` from `__type`, the body's members, `$fault`, `$metadata`), so callers
 * catch them unchanged. The SDK stays everywhere else (queries, transactions, every other service).
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import type { SignatureV4 } from '@smithy/signature-v4';
import type { Checksum, SourceData } from '@smithy/types';
import http from 'node:http';
import https from 'node:https';

/** An AWS JSON service as this client speaks it. */
export interface AwsJsonService {
  /** SigV4's signing name, and the endpoint's host prefix (`dynamodb`, `sqs`). */
  signingName: string;
  /** `X-Amz-Target`'s prefix (`DynamoDB_20120810`, `AmazonSQS`). */
  targetPrefix: string;
  /** The `<SERVICE>` of `AWS_ENDPOINT_URL_<SERVICE>`, as the SDK reads it. */
  endpointEnvName: string;
  /** awsQueryCompatible services (SQS) say so in a header and name query error codes in another. */
  queryCompatible?: boolean;
}

export const DYNAMODB_JSON: AwsJsonService = { signingName: 'dynamodb', targetPrefix: 'DynamoDB_20120810', endpointEnvName: 'DYNAMODB' };
export const SQS_JSON: AwsJsonService = { signingName: 'sqs', targetPrefix: 'AmazonSQS', endpointEnvName: 'SQS', queryCompatible: true };

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
  /** When temporary credentials stop working; they are refreshed five minutes before. */
  expiration?: Date | undefined;
}

export type CredentialsProvider = () => Promise<AwsCredentials>;

/** One HTTP attempt, as observers see it (counters of the bench; nothing secret in it). */
export interface SignedCall {
  operation: string;
  /** 1 for the first attempt, 2 for the first retry, ... */
  attempt: number;
}

export interface SignedJsonOptions {
  service: AwsJsonService;
  region: string;
  /** An explicit endpoint (DYNAMODB_ENDPOINT, a test server); else AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL, the regional one. */
  endpoint?: string | undefined;
  /** Absent: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else the SDK's default provider chain. */
  credentials?: AwsCredentials | CredentialsProvider | undefined;
  /** Opening a connection (the SDK's `connectionTimeout`); 0: none. */
  connectionTimeoutMs?: number;
  /** The whole attempt, connection included (the SDK's `requestTimeout` with `throwOnRequestTimeout`); 0: none. */
  requestTimeoutMs?: number;
  /** Attempts per call; absent: AWS_MAX_ATTEMPTS, else 3 (the SDK's standard mode). */
  maxAttempts?: number;
  /** The environment endpoints and credentials are read from (tests); default process.env. */
  env?: NodeJS.ProcessEnv;
}

/** What every answer and every error of a call carries, as the SDK's `$metadata`. */
export interface CallMetadata {
  httpStatusCode?: number;
  requestId?: string;
  attempts: number;
  totalRetryDelay: number;
}

/** An error of a call: the SDK's shape (the service's members are own properties too). */
export type AwsCallError = Error & { $fault?: 'client' | 'server'; $metadata: CallMetadata; code?: string; [member: string]: unknown };

// The SDK's standard retry mode (@smithy/core/retry, StandardRetryStrategy with its 2026 constants).
const BASE_DELAY_MS = 50;
const THROTTLING_BASE_DELAY_MS = 1_000;
const MAX_DELAY_MS = 20_000;
const RETRY_QUOTA = 500;
const RETRY_COST = 14;
const THROTTLING_RETRY_COST = 5;
const THROTTLING_NAMES = new Set([
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'LimitExceededException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
]);
const TRANSIENT_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException']);
const TRANSIENT_STATUSES = new Set([500, 502, 503, 504]);
const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** The SDK refreshes temporary credentials this long before they expire. */
const CREDENTIALS_REFRESH_MS = 300_000;

/** The parts of a request that SigV4 signs (POST to the endpoint's root, no query string). */
export interface SigningInput {
  /** Every header sent (names in lower case), `host` included; all of them are signed. */
  headers: Record<string, string>;
  body: Buffer;
  date?: Date | undefined;
}

/** node:crypto's SHA-256 (an HMAC when given a key), in the shape `@smithy/signature-v4` hashes with. */
class NodeSha256 implements Checksum {
  readonly #key: Buffer | string | undefined;
  #hash: Hash | Hmac;
  constructor(secret?: SourceData) {
    this.#key =
      secret === undefined
        ? undefined
        : typeof secret === 'string'
          ? secret
          : Buffer.from(ArrayBuffer.isView(secret) ? secret.buffer.slice(secret.byteOffset, secret.byteOffset + secret.byteLength) : secret);
    this.#hash = this.#fresh();
  }
  #fresh(): Hash | Hmac {
    return this.#key === undefined ? createHash('sha256') : createHmac('sha256', this.#key);
  }
  update(data: Uint8Array): void {
    this.#hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return this.#hash.digest();
  }
  reset(): void {
    this.#hash = this.#fresh();
  }
}

/**
 * The SDK's own SigV4 signer for one service and region (it caches the day's signing key), imported
 * on the first call: a gateway cold start does not load it before it sends anything.
 */
export async function awsSigner(service: string, region: string, credentials: () => Promise<AwsCredentials>): Promise<SignatureV4> {
  const { SignatureV4 } = await import('@smithy/signature-v4');
  return new SignatureV4({ service, region, credentials, sha256: NodeSha256, applyChecksum: false });
}

/**
 * Signs a POST to `/` with SigV4 (header signing): answers the headers with `x-amz-date`,
 * `x-amz-security-token` and `authorization` added.
 */
export async function signRequest(signer: SignatureV4, host: string, input: SigningInput): Promise<Record<string, string>> {
  const signed = await signer.sign(
    { method: 'POST', protocol: 'https:', hostname: host, path: '/', query: {}, headers: { ...input.headers }, body: input.body },
    input.date ? { signingDate: input.date } : {},
  );
  return signed.headers;
}

/**
 * The endpoint the SDK would call: the explicit one, else AWS_ENDPOINT_URL_<SERVICE> and
 * AWS_ENDPOINT_URL (unless AWS_IGNORE_CONFIGURED_ENDPOINT_URLS), else the regional endpoint.
 * Undefined where the SDK's endpoint rules would pick another host (FIPS, dual-stack, the ISO
 * partitions): callers then stay on the SDK.
 */
export function awsJsonEndpoint(service: AwsJsonService, region: string, explicit?: string, env: NodeJS.ProcessEnv = process.env): URL | undefined {
  if (explicit) return new URL(explicit);
  if (env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS?.toLowerCase() !== 'true') {
    const configured = env[`AWS_ENDPOINT_URL_${service.endpointEnvName}`] || env.AWS_ENDPOINT_URL;
    if (configured) return new URL(configured);
  }
  if (env.AWS_USE_FIPS_ENDPOINT?.toLowerCase() === 'true' || env.AWS_USE_DUALSTACK_ENDPOINT?.toLowerCase() === 'true') return undefined;
  if (!/^[a-z]{2}(-[a-z]+)+-\d+$/.test(region) || region.startsWith('us-iso') || region.startsWith('eu-isoe')) return undefined;
  const suffix = region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
  return new URL(`https://${service.signingName}.${region}.${suffix}`);
}

/** Static credentials from the environment, as Lambda sets them; undefined when absent. */
export function credentialsFromEnv(env: NodeJS.ProcessEnv = process.env): AwsCredentials | undefined {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) return undefined;
  return { accessKeyId, secretAccessKey, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) };
}

/** The SDK's default chain (profiles, SSO, web identity, ECS, IMDS), imported on first use; one per process. */
let chain: Promise<CredentialsProvider> | undefined;
const defaultChain = (): Promise<CredentialsProvider> => {
  chain ??= import('@aws-sdk/credential-provider-node').then(({ defaultProvider }) => {
    const provider = defaultProvider();
    return () => provider();
  });
  chain.catch(() => (chain = undefined));
  return chain;
};

export class SignedJsonClient {
  readonly #service: AwsJsonService;
  readonly #region: string;
  readonly #url: URL;
  readonly #transport: typeof http | typeof https;
  readonly #agent: http.Agent;
  readonly #connectionTimeoutMs: number;
  readonly #requestTimeoutMs: number;
  readonly #maxAttempts: number;
  readonly #credentialSource: AwsCredentials | CredentialsProvider | undefined;
  readonly #env: NodeJS.ProcessEnv;
  readonly #observers: ((call: SignedCall) => void)[] = [];
  #credentials: AwsCredentials | undefined;
  #refreshing: Promise<AwsCredentials> | undefined;
  #retryQuota = RETRY_QUOTA;
  #signer: Promise<SignatureV4> | undefined;

  constructor(opts: SignedJsonOptions & { endpointUrl: URL }) {
    this.#service = opts.service;
    this.#region = opts.region;
    this.#url = opts.endpointUrl;
    const secure = this.#url.protocol === 'https:';
    this.#transport = secure ? https : http;
    // As the SDK's NodeHttpHandler: keep-alive, at most 50 sockets per host.
    this.#agent = secure ? new https.Agent({ keepAlive: true, maxSockets: 50 }) : new http.Agent({ keepAlive: true, maxSockets: 50 });
    this.#connectionTimeoutMs = opts.connectionTimeoutMs ?? 0;
    this.#requestTimeoutMs = opts.requestTimeoutMs ?? 0;
    this.#env = opts.env ?? process.env;
    const envAttempts = Number(this.#env.AWS_MAX_ATTEMPTS);
    this.#maxAttempts = Math.max(1, opts.maxAttempts ?? (Number.isInteger(envAttempts) && envAttempts > 0 ? envAttempts : 3));
    this.#credentialSource = opts.credentials;
  }

  #signerOnce(): Promise<SignatureV4> {
    if (!this.#signer) {
      const made = awsSigner(this.#service.signingName, this.#region, () => this.#currentCredentials());
      // A failed import is tried again on the next call rather than remembered.
      made.catch(() => (this.#signer = undefined));
      this.#signer = made;
    }
    return this.#signer;
  }

  /**
   * A client, or undefined where the SDK's endpoint rules would pick a host this client does not
   * know, or the endpoint has a path (this client signs and sends to `/` only).
   */
  static create(opts: SignedJsonOptions): SignedJsonClient | undefined {
    const endpointUrl = awsJsonEndpoint(opts.service, opts.region, opts.endpoint, opts.env);
    if (!endpointUrl || endpointUrl.pathname !== '/' || endpointUrl.search) return undefined;
    return new SignedJsonClient({ ...opts, endpointUrl });
  }

  get endpoint(): string {
    return this.#url.href;
  }

  /** Calls `fn` for every HTTP attempt (a bench's counter); the call goes on whatever it does. */
  observe(fn: (call: SignedCall) => void): void {
    this.#observers.push(fn);
  }

  /** Sends `operation` with `input` as its JSON body; answers the parsed answer with `$metadata`. */
  async call<O extends object = Record<string, unknown>>(
    operation: string,
    input: unknown,
    onAttempt?: (attempt: number) => void,
  ): Promise<O & { $metadata: CallMetadata }> {
    const body = Buffer.from(JSON.stringify(input), 'utf8');
    let totalRetryDelay = 0;
    let lastRetryCost = 0;
    for (let attempt = 1; ; attempt++) {
      onAttempt?.(attempt);
      for (const fn of this.#observers) fn({ operation, attempt });
      try {
        const { status, headers, text } = await this.#attempt(operation, body);
        const metadata: CallMetadata = { httpStatusCode: status, attempts: attempt, totalRetryDelay };
        const requestId = headers['x-amzn-requestid'];
        if (typeof requestId === 'string') metadata.requestId = requestId;
        if (status >= 200 && status < 300) {
          // As the SDK: a success after a retry gives its cost back, a first-time success one unit.
          this.#retryQuota = Math.min(RETRY_QUOTA, this.#retryQuota + (lastRetryCost || 1));
          return Object.assign(text ? (JSON.parse(text) as O) : ({} as O), { $metadata: metadata });
        }
        throw serviceError(status, headers, text, metadata, this.#service.queryCompatible === true);
      } catch (err) {
        const e = asCallError(err, attempt, totalRetryDelay);
        const kind = retryKind(e);
        const cost = kind === 'throttling' ? THROTTLING_RETRY_COST : RETRY_COST;
        if (!kind || attempt >= this.#maxAttempts || this.#retryQuota < cost) throw e;
        this.#retryQuota -= cost;
        lastRetryCost = cost;
        const base = kind === 'throttling' ? THROTTLING_BASE_DELAY_MS : BASE_DELAY_MS;
        const delay = Math.floor(Math.random() * Math.min(base * 2 ** (attempt - 1), MAX_DELAY_MS));
        totalRetryDelay += delay;
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /** Closes the kept-alive connections (tests, shutdown). */
  destroy(): void {
    this.#agent.destroy();
  }

  async #attempt(operation: string, body: Buffer): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
    const url = this.#url;
    const headers: Record<string, string> = {
      host: url.host,
      'content-type': 'application/x-amz-json-1.0',
      'content-length': String(body.byteLength),
      'x-amz-target': `${this.#service.targetPrefix}.${operation}`,
    };
    if (this.#service.queryCompatible) headers['x-amzn-query-mode'] = 'true';
    return this.#send(await signRequest(await this.#signerOnce(), url.host, { headers, body }), body);
  }

  #send(headers: Record<string, string>, body: Buffer): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
    const url = this.#url;
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const req = this.#transport.request({
        method: 'POST',
        hostname: url.hostname,
        port: url.port || undefined,
        path: '/',
        headers,
        agent: this.#agent,
      });
      const fail = (err: Error) => {
        clearTimeout(timer);
        req.destroy();
        reject(err);
      };
      if (this.#requestTimeoutMs > 0) {
        timer = setTimeout(() => fail(timeoutError(`Request did not complete within ${this.#requestTimeoutMs} ms`)), this.#requestTimeoutMs);
      }
      if (this.#connectionTimeoutMs > 0) {
        req.once('socket', (socket) => {
          if (!socket.connecting) return;
          const connect = setTimeout(
            () => fail(timeoutError(`Socket timed out without establishing a connection within ${this.#connectionTimeoutMs} ms`)),
            this.#connectionTimeoutMs,
          );
          socket.once('connect', () => clearTimeout(connect));
          socket.once('close', () => clearTimeout(connect));
        });
      }
      req.once('error', fail);
      req.once('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.once('error', fail);
        res.once('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
        });
      });
      req.end(body);
    });
  }

  /** Cached credentials, refreshed five minutes before they expire (the SDK's memoization). */
  #currentCredentials(): Promise<AwsCredentials> {
    const held = this.#credentials;
    if (held && (!held.expiration || held.expiration.getTime() - Date.now() > CREDENTIALS_REFRESH_MS)) return Promise.resolve(held);
    if (!this.#refreshing) {
      const refreshing = this.#resolveCredentials().then(
        (c) => {
          this.#credentials = c;
          this.#refreshing = undefined;
          return c;
        },
        (err: unknown) => {
          this.#refreshing = undefined;
          throw err;
        },
      );
      this.#refreshing = refreshing;
    }
    return this.#refreshing;
  }

  async #resolveCredentials(): Promise<AwsCredentials> {
    const source = this.#credentialSource;
    if (typeof source === 'function') return source();
    if (source) return source;
    return credentialsFromEnv(this.#env) ?? (await defaultChain())();
  }
}

function timeoutError(message: string): Error {
  return Object.assign(new Error(message), { name: 'TimeoutError' });
}

/** `x-amzn-errortype` / `__type` / `code` as the SDK reads them: no namespace (`...#`), no `:` or `,` suffix. */
const sanitizeCode = (raw: unknown): string | undefined => {
  if (typeof raw !== 'string' && typeof raw !== 'number') return undefined;
  let code = String(raw);
  if (code.includes(',')) code = code.split(',')[0] ?? code;
  if (code.includes(':')) code = code.split(':')[0] ?? code;
  if (code.includes('#')) code = code.split('#')[1] ?? code;
  return code;
};

/** The error the SDK would throw for a non-2xx answer: named by the service, its members on it. */
function serviceError(status: number, headers: http.IncomingHttpHeaders, text: string, metadata: CallMetadata, queryCompatible: boolean): AwsCallError {
  let data: Record<string, unknown> = {};
  try {
    const parsed: unknown = text ? JSON.parse(text) : {};
    if (parsed && typeof parsed === 'object') data = parsed as Record<string, unknown>;
  } catch {
    // A proxy's HTML page: "Unknown", its status in $metadata (5xx is retried).
  }
  const name = sanitizeCode(data.__type) ?? sanitizeCode(data.code) ?? sanitizeCode(headers['x-amzn-errortype']) ?? 'Unknown';
  const message = data.message ?? data.Message ?? 'UnknownError';
  const err = new Error(typeof message === 'string' ? message : 'UnknownError') as AwsCallError;
  for (const [k, v] of Object.entries(data)) if (k !== '__type' && k !== 'message' && k !== 'Message' && v !== undefined) err[k] = v;
  const queryError = headers['x-amzn-query-error'];
  if (queryCompatible && typeof queryError === 'string') {
    // The query protocol's code (`AWS.SimpleQueueService.NonExistentQueue`), as the SDK keeps it.
    const [Code, Type] = queryError.split(';');
    Object.assign(err, { Code, Type });
  }
  return Object.assign(err, { name, $fault: status < 500 ? ('client' as const) : ('server' as const), $metadata: metadata });
}

/** Any failure as the SDK surfaces it: with `$metadata` (attempts), network errors keeping their `code`. */
function asCallError(err: unknown, attempts: number, totalRetryDelay: number): AwsCallError {
  const e = (err instanceof Error ? err : new Error(String(err))) as AwsCallError;
  e.$metadata = { ...(e.$metadata ?? {}), attempts, totalRetryDelay };
  return e;
}

function retryKind(e: AwsCallError): 'throttling' | 'transient' | undefined {
  const status = e.$metadata.httpStatusCode;
  if (status === 429 || THROTTLING_NAMES.has(e.name)) return 'throttling';
  if (TRANSIENT_NAMES.has(e.name) || (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) || (status !== undefined && TRANSIENT_STATUSES.has(status)))
    return 'transient';
  return undefined;
}
