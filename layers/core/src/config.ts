/**
 * Configuration is read once from the environment, validated, and passed down. A missing or bad
 * variable fails at start with its name.
 */
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';

/** An unset or empty variable counts as absent, so defaults apply (never a silent 0). */
const blankAsUnset = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);

/** Runs `fn` on the raw value before `schema` sees it. */
function preprocess<S extends z.core.$ZodType>(fn: (v: unknown) => unknown, schema: S): z.ZodMiniPipe<z.ZodMiniTransform, S> {
  return z.pipe(z.transform(fn), schema);
}

const upperBlankAsUnset = (v: unknown) => (typeof v === 'string' ? blankAsUnset(v.trim().toUpperCase()) : v);

const onOff = preprocess(
  upperBlankAsUnset,
  z.pipe(
    z.optional(z.enum(['ON', 'OFF', 'TRUE', 'FALSE', '1', '0'])),
    z.transform((v) => v === undefined || !['OFF', 'FALSE', '0'].includes(v)),
  ),
);

const nonEmpty = () => z.string().check(z.minLength(1));
const optionalNonEmpty = () => preprocess(blankAsUnset, z.optional(nonEmpty()));
const optionalUrl = () => preprocess(blankAsUnset, z.optional(z.url()));

/** An integer (seconds, hours, ...) within `bounds`, `fallback` when unset. */
const wholeNumber = (fallback: number, ...bounds: z.core.$ZodCheck<number>[]) =>
  preprocess(blankAsUnset, z._default(z.coerce.number().check(z.int(), ...bounds), fallback));

const envSchema = z.object({
  TABLE_NAME: nonEmpty(),
  /** DynamoDB endpoint override (DynamoDB Local); absent in AWS. */
  DYNAMODB_ENDPOINT: z.optional(z.url()),
  AWS_REGION: z._default(nonEmpty(), 'us-east-1'),
  GW_TRUSTED_CUSTOM_HOSTS: z.optional(z.string()),
  /** Blob storage: an S3 bucket in AWS, else a directory (local runtime). */
  BLOB_BUCKET: z.optional(nonEmpty()),
  GW_BLOB_DIR: z.optional(nonEmpty()),
  /** Mail: the SES sender address in AWS; without it (or locally) mail goes to the outbox directory. */
  MAIL_FROM: preprocess(blankAsUnset, z.optional(z.email())),
  GW_OUTBOX_DIR: z.optional(nonEmpty()),
  /** Credential encryption: a KMS key in AWS; else a local key file (GW_CIPHER_KEY_FILE, or cipher.key in GW_DATA_DIR). */
  CIPHER_KMS_KEY_ID: optionalNonEmpty(),
  GW_CIPHER_KEY_FILE: optionalNonEmpty(),
  GW_DATA_DIR: optionalNonEmpty(),
  /** Where the local server keeps its data: `local` (DynamoDB Local in GW_DATA_DIR) or `aws` (the table, queues, bucket and key of AWS; docs/container.md). */
  GW_STORAGE: preprocess(blankAsUnset, z._default(z.enum(['local', 'aws']), 'local')),
  /** Most MiB each local queue's spool (`<GW_DATA_DIR>/spool/<queue>/`) keeps on disk. */
  GW_LOG_SPOOL_MAX_MB: wholeNumber(256, z.gte(1), z.lte(1_048_576)),
  /** fdatasync the spool (group commit) before an accepted message counts as kept; OFF: the OS's cache only. */
  // Off by default: the answer waits for the spool's write, which a crash of the process survives;
  // ON adds a group fdatasync (survives the machine's crash too) at about 2 ms an answer here.
  GW_LOG_SPOOL_FSYNC: preprocess(upperBlankAsUnset, z._default(z.enum(['ON', 'OFF']), 'OFF')),
  /** Most messages each local queue holds in memory; beyond it they wait in the spool only. */
  GW_QUEUE_MAX_IN_MEMORY: wholeNumber(2000, z.gte(25), z.lte(1_000_000)),
  LOG_LEVEL: z.pipe(
    z.pipe(
      z.optional(z.string()),
      z.transform((v) => v?.toUpperCase()),
    ),
    z._default(z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']), 'WARN'),
  ),
  /** Every DynamoDB call: time to connect, and time for the whole request once connected. */
  GW_DYNAMODB_CONNECT_TIMEOUT_MS: wholeNumber(1_000, z.gte(50), z.lte(60_000)),
  GW_DYNAMODB_REQUEST_TIMEOUT_MS: wholeNumber(3_000, z.gte(50), z.lte(120_000)),
  /** The per-request AWS calls (DynamoDB Get/Put/UpdateItem, SQS SendMessageBatch) over the lean signed client; OFF: the AWS SDK's. */
  GW_LEAN_AWS_CALLS: onOff,
  /** Seconds a warm API key is served from the in-process cache before it is re-read. */
  GW_KEY_CACHE_TTL_SECONDS: wholeNumber(10, z.gte(0), z.lte(300)),
  // Longest silence between two bytes of a provider's answer before it is given up (1 s to 15 min).
  GW_UPSTREAM_IDLE_TIMEOUT_SECONDS: wholeNumber(60, z.gte(1), z.lte(900)),
  GUARDRAILS_ENABLED: onOff,
  API_ACCESS_ENABLED: onOff,
  DATA_EXPORTS_ENABLED: onOff,
  USAGE_LIMITS_ENABLED: onOff,
  AUDIT_LOGS_ENABLED: onOff,
  SCIM_ENABLED: onOff,
  POLICY_ENABLED: onOff,
  LOG_RETENTION_DISPLAY: wholeNumber(90, z.gte(1)),
  METRICS_RETENTION_DISPLAY: wholeNumber(365, z.gte(1)),
  /** Request logs (the `logging` gateway hook); OFF sends no log events. */
  GW_REQUEST_LOGS: onOff,
  /** CloudWatch EMF metrics on stdout (the `metrics` gateway hook); ON in Lambda, off locally unless asked. */
  GW_EMF_METRICS: preprocess(upperBlankAsUnset, z._default(z.enum(['ON', 'OFF']), 'OFF')),
  /** JWT authentication: the JWKS URL turns it on; issuer and audience are then required. */
  GW_JWKS_URL: optionalUrl(),
  /** OpenTelemetry traces over OTLP/HTTP JSON (the `otel` gateway hook): the collector's base URL turns it on. */
  OTEL_EXPORTER_OTLP_ENDPOINT: preprocess(blankAsUnset, z.optional(z.url({ protocol: /^https?$/ }))),
  /** Headers sent to the collector, `k=v,k2=v2` (values may be percent-encoded). */
  OTEL_EXPORTER_OTLP_HEADERS: optionalNonEmpty(),
  OTEL_SERVICE_NAME: preprocess(blankAsUnset, z._default(nonEmpty(), 'gantry')),
  GW_JWT_ISSUER: optionalNonEmpty(),
  /** One audience or several, comma-separated. */
  GW_JWT_AUDIENCE: optionalNonEmpty(),
  GW_JWKS_CACHE_SECONDS: wholeNumber(600, z.gte(0)),
  /** How soon an unknown key id may trigger another JWKS fetch (rotated keys). */
  GW_JWKS_COOLDOWN_SECONDS: wholeNumber(30, z.gte(0)),
  /** The base URL invite links point at (e.g. https://gantry.example.com); else the request's origin. */
  GW_PUBLIC_URL: optionalUrl(),
  /** Local server: PEM certificate and key files; both set, it serves https:// and wss:// (docs/realtime.md). */
  GW_TLS_CERT: optionalNonEmpty(),
  GW_TLS_KEY: optionalNonEmpty(),
  /** Browser origins (comma-separated, or `*`) that may call the MCP gateway besides its own (docs/mcp.md). */
  GW_MCP_ALLOWED_ORIGINS: optionalNonEmpty(),
  GW_INVITE_TTL_HOURS: wholeNumber(168, z.gte(1), z.lte(720)),
  /** How long a console sign-in lasts (5 min to 7 days); the organisation's max_session_ttl may cut it shorter. */
  GW_CONSOLE_SESSION_TTL_SECONDS: preprocess(blankAsUnset, z.optional(z.coerce.number().check(z.int(), z.gte(300), z.lte(604_800)))),
  /** Local runtime: how often the key lifecycle (expiry, rotation, usage resets, alerts) runs. */
  GW_KEY_LIFECYCLE_INTERVAL_SECONDS: wholeNumber(60, z.gte(0)),
  /** `x-portkey-*` request headers as aliases of `x-gw-*` (the Portkey SDK); OFF refuses the alias. */
  GW_PORTKEY_HEADERS: preprocess(upperBlankAsUnset, z.optional(z.enum(['ON', 'OFF']))),
  /** Secret references: how long a fetched secret value is used before the manager is asked again. */
  GW_SECRET_CACHE_TTL_SECONDS: wholeNumber(60, z.gte(0), z.lte(3_600)),
  /** Deadline of one call to a secret manager. */
  GW_SECRET_MANAGER_TIMEOUT_MS: wholeNumber(5_000, z.gte(100), z.lte(60_000)),
  /** AWS Secrets Manager endpoint override (a VPC endpoint, a local stand-in). */
  GW_SECRETS_MANAGER_ENDPOINT: optionalUrl(),
  /** Entra ID authority host for azure_kv references (sovereign clouds). */
  GW_AZURE_AUTHORITY_HOST: preprocess(blankAsUnset, z._default(z.url(), 'https://login.microsoftonline.com')),
  /** The service account token Vault's Kubernetes auth logs in with. */
  GW_VAULT_K8S_TOKEN_FILE: preprocess(blankAsUnset, z._default(nonEmpty(), '/var/run/secrets/kubernetes.io/serviceaccount/token')),
  /** A managed identity endpoint (App Service, Container Apps) for azure_kv references in managed mode. */
  IDENTITY_ENDPOINT: optionalUrl(),
  IDENTITY_HEADER: optionalNonEmpty(),
});

export interface FeatureFlags {
  guardrails: boolean;
  apiAccess: boolean;
  dataExports: boolean;
  usageLimits: boolean;
  auditLogs: boolean;
  scim: boolean;
  policy: boolean;
}

export interface AppConfig {
  tableName: string;
  dynamodbEndpoint: string | undefined;
  region: string;
  trustedCustomHosts: string | undefined;
  blobBucket: string | undefined;
  blobDir: string | undefined;
  keyCacheTtlMs: number;
  /** Longest silence between two bytes of a provider's answer, once its headers came. */
  upstreamIdleTimeoutMs: number;
  /** Timeouts of every DynamoDB call. */
  dynamodbTimeouts: { connectionTimeoutMs: number; requestTimeoutMs: number; maxAttempts: number };
  /** False (GW_LEAN_AWS_CALLS=OFF): DynamoDB's single-item calls and SQS sends go through the AWS SDK; absent: the lean signed client (ports/aws/signed-json.ts). */
  leanAwsCalls?: false;
  logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  features: FeatureFlags;
  logRetentionDays: number;
  metricsRetentionDays: number;
  /** Whether gateway requests are logged, and whether EMF metrics are written. */
  requestLogs: boolean;
  emfMetrics: boolean;
  /** JWT authentication; undefined when GW_JWKS_URL is not set. */
  jwt: JwtConfig | undefined;
  /** OpenTelemetry trace export; undefined when OTEL_EXPORTER_OTLP_ENDPOINT is not set. */
  otel?: OtelConfig;
  publicUrl: string | undefined;
  /** The local server's TLS certificate and key (PEM file paths); absent: it serves plain HTTP. */
  tls?: { certFile: string; keyFile: string };
  /** GW_MCP_ALLOWED_ORIGINS: origins (`https://app.example.com`) or `*`; unset: none besides the same origin. */
  mcpAllowedOrigins?: readonly string[];
  inviteTtlMs: number;
  /** How long a console session lasts at most (the organisation's max_session_ttl may cut it); unset: 8 hours. */
  consoleSessionTtlSeconds?: number;
  /** 0 disables the in-process key lifecycle schedule (local runtime). */
  keyLifecycleIntervalMs: number;
  /** The SES sender; unset means no SES (mail goes to the outbox). */
  mailFrom: string | undefined;
  outboxDir: string | undefined;
  /** Every `QUEUE_URL_<NAME>` variable, by variable name, for the SQS queue factory. */
  queueUrls: Record<string, string>;
  /** The KMS key that encrypts provider credentials (AWS). */
  cipherKmsKeyId: string | undefined;
  /** The local cipher key file; undefined (in-memory data) means a temporary one. */
  cipherKeyFile: string | undefined;
  /** `aws` (GW_STORAGE=aws): a server on AWS's table, queues, bucket and key, which its replicas share; absent elsewhere. */
  storage?: 'aws';
  /** Local queues' durable spool (from GW_DATA_DIR and GW_LOG_SPOOL_MAX_MB); absent with `:memory:` data or none. */
  spool?: { dir: string; maxBytes: number; fsync: boolean };
  /** With a spool: most messages each local queue holds in memory (GW_QUEUE_MAX_IN_MEMORY). */
  queueMaxInMemory?: number;
  /** `x-portkey-*` headers as aliases of `x-gw-*`: on unless GW_PORTKEY_HEADERS=OFF. */
  portkeyHeaders: boolean;
  /** Secret references (docs/secret-references.md); absent when none of their variables is set: `secretsConfig` gives the defaults. */
  secrets?: SecretsConfig;
}

export interface SecretsConfig {
  valueTtlMs: number;
  timeoutMs: number;
  awsEndpoint: string | undefined;
  azureAuthorityHost: string;
  vaultKubernetesTokenFile: string;
  identityEndpoint: string | undefined;
  identityHeader: string | undefined;
}

/** Queue URLs come in one variable per queue, so they are picked out by prefix. */
const queueUrlsSchema = z.record(z.string(), z.url());

/** zod's English messages: zod/mini registers no locale of its own. */
const ENGLISH: z.core.ParseContext<z.core.$ZodIssue> = { error: en().localeError };
const queueUrlVariables = (env: Record<string, string | undefined>) =>
  Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith('QUEUE_URL_') && blankAsUnset(v) !== undefined));

export interface JwtConfig {
  jwksUrl: string;
  issuer: string;
  audience: string[];
  cacheMaxAgeMs: number;
  cooldownMs: number;
}

export interface OtelConfig {
  /** The collector's base URL; traces go to `${endpoint}/v1/traces`. */
  endpoint: string;
  headers: Record<string, string>;
  serviceName: string;
}

/**
 * OTEL_EXPORTER_OTLP_HEADERS as the OpenTelemetry spec writes it. The values are often tokens, so
 * an error names the variable and never echoes them.
 */
function otlpHeaders(raw: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const part of (raw ?? '').split(',')) {
    if (part.trim() === '') continue;
    const at = part.indexOf('=');
    const name = at > 0 ? part.slice(0, at).trim() : '';
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name))
      throw new ConfigError('Invalid configuration: OTEL_EXPORTER_OTLP_HEADERS must be name=value pairs separated by commas');
    try {
      headers[name] = decodeURIComponent(part.slice(at + 1).trim());
    } catch {
      throw new ConfigError(`Invalid configuration: OTEL_EXPORTER_OTLP_HEADERS has a badly percent-encoded value for ${name}`);
    }
  }
  return headers;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** GW_MCP_ALLOWED_ORIGINS: each entry `*` or an http(s) origin without a path, as a browser sends it. */
function allowedOrigins(raw: string): string[] {
  return raw
    .split(',')
    .map((o) => o.trim().replace(/\/+$/, ''))
    .filter(Boolean)
    .map((o) => {
      if (o === '*') return o;
      const url = URL.canParse(o) ? new URL(o) : undefined;
      if (!url || !/^https?:$/.test(url.protocol) || url.origin !== o.toLowerCase()) {
        throw new ConfigError(
          `Invalid configuration: GW_MCP_ALLOWED_ORIGINS must be origins such as https://app.example.com (or *) separated by commas, not ${JSON.stringify(o.slice(0, 100))}`,
        );
      }
      return url.origin;
    });
}

const SECRET_VARIABLES = [
  'GW_SECRET_CACHE_TTL_SECONDS',
  'GW_SECRET_MANAGER_TIMEOUT_MS',
  'GW_SECRETS_MANAGER_ENDPOINT',
  'GW_AZURE_AUTHORITY_HOST',
  'GW_VAULT_K8S_TOKEN_FILE',
  'IDENTITY_ENDPOINT',
  'IDENTITY_HEADER',
];

function secretsOf(e: z.output<typeof envSchema>): SecretsConfig {
  return {
    valueTtlMs: e.GW_SECRET_CACHE_TTL_SECONDS * 1000,
    timeoutMs: e.GW_SECRET_MANAGER_TIMEOUT_MS,
    awsEndpoint: e.GW_SECRETS_MANAGER_ENDPOINT,
    azureAuthorityHost: e.GW_AZURE_AUTHORITY_HOST,
    vaultKubernetesTokenFile: e.GW_VAULT_K8S_TOKEN_FILE,
    identityEndpoint: e.IDENTITY_ENDPOINT,
    identityHeader: e.IDENTITY_HEADER,
  };
}

/** The secret reference settings, their defaults when none was set. */
export function secretsConfig(config: Pick<AppConfig, 'secrets'>): SecretsConfig {
  return config.secrets ?? secretsOf(envSchema.parse({ TABLE_NAME: '-' }, ENGLISH));
}

export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const parsed = envSchema.safeParse(env, ENGLISH);
  const queueUrls = queueUrlsSchema.safeParse(queueUrlVariables(env), ENGLISH);
  if (!parsed.success || !queueUrls.success) {
    const issues = [...(parsed.error?.issues ?? []), ...(queueUrls.error?.issues ?? [])];
    const problems = issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  if (e.GW_JWKS_URL && (!e.GW_JWT_ISSUER || !e.GW_JWT_AUDIENCE)) {
    throw new ConfigError(`Invalid configuration: GW_JWKS_URL needs ${!e.GW_JWT_ISSUER ? 'GW_JWT_ISSUER' : 'GW_JWT_AUDIENCE'} too`);
  }
  if (!e.GW_TLS_CERT !== !e.GW_TLS_KEY) {
    throw new ConfigError(`Invalid configuration: ${e.GW_TLS_CERT ? 'GW_TLS_CERT needs GW_TLS_KEY' : 'GW_TLS_KEY needs GW_TLS_CERT'} too`);
  }
  return {
    tableName: e.TABLE_NAME,
    dynamodbEndpoint: e.DYNAMODB_ENDPOINT,
    region: e.AWS_REGION,
    trustedCustomHosts: e.GW_TRUSTED_CUSTOM_HOSTS,
    blobBucket: e.BLOB_BUCKET,
    blobDir: e.GW_BLOB_DIR,
    keyCacheTtlMs: e.GW_KEY_CACHE_TTL_SECONDS * 1000,
    upstreamIdleTimeoutMs: e.GW_UPSTREAM_IDLE_TIMEOUT_SECONDS * 1000,
    dynamodbTimeouts: { connectionTimeoutMs: e.GW_DYNAMODB_CONNECT_TIMEOUT_MS, requestTimeoutMs: e.GW_DYNAMODB_REQUEST_TIMEOUT_MS, maxAttempts: 2 },
    ...(e.GW_LEAN_AWS_CALLS ? {} : { leanAwsCalls: false as const }),
    logLevel: e.LOG_LEVEL,
    features: {
      guardrails: e.GUARDRAILS_ENABLED,
      apiAccess: e.API_ACCESS_ENABLED,
      dataExports: e.DATA_EXPORTS_ENABLED,
      usageLimits: e.USAGE_LIMITS_ENABLED,
      auditLogs: e.AUDIT_LOGS_ENABLED,
      scim: e.SCIM_ENABLED,
      policy: e.POLICY_ENABLED,
    },
    logRetentionDays: e.LOG_RETENTION_DISPLAY,
    metricsRetentionDays: e.METRICS_RETENTION_DISPLAY,
    requestLogs: e.GW_REQUEST_LOGS,
    emfMetrics: e.GW_EMF_METRICS === 'ON',
    jwt:
      e.GW_JWKS_URL && e.GW_JWT_ISSUER && e.GW_JWT_AUDIENCE
        ? {
            jwksUrl: e.GW_JWKS_URL,
            issuer: e.GW_JWT_ISSUER,
            audience: e.GW_JWT_AUDIENCE.split(',')
              .map((a) => a.trim())
              .filter(Boolean),
            cacheMaxAgeMs: e.GW_JWKS_CACHE_SECONDS * 1000,
            cooldownMs: e.GW_JWKS_COOLDOWN_SECONDS * 1000,
          }
        : undefined,
    ...(e.OTEL_EXPORTER_OTLP_ENDPOINT
      ? {
          otel: {
            endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, ''),
            headers: otlpHeaders(e.OTEL_EXPORTER_OTLP_HEADERS),
            serviceName: e.OTEL_SERVICE_NAME,
          },
        }
      : {}),
    publicUrl: e.GW_PUBLIC_URL,
    ...(e.GW_TLS_CERT && e.GW_TLS_KEY ? { tls: { certFile: e.GW_TLS_CERT, keyFile: e.GW_TLS_KEY } } : {}),
    ...(e.GW_MCP_ALLOWED_ORIGINS ? { mcpAllowedOrigins: allowedOrigins(e.GW_MCP_ALLOWED_ORIGINS) } : {}),
    inviteTtlMs: e.GW_INVITE_TTL_HOURS * 3_600_000,
    ...(e.GW_CONSOLE_SESSION_TTL_SECONDS !== undefined ? { consoleSessionTtlSeconds: e.GW_CONSOLE_SESSION_TTL_SECONDS } : {}),
    keyLifecycleIntervalMs: e.GW_KEY_LIFECYCLE_INTERVAL_SECONDS * 1000,
    mailFrom: e.MAIL_FROM,
    outboxDir: e.GW_OUTBOX_DIR,
    queueUrls: queueUrls.data,
    cipherKmsKeyId: e.CIPHER_KMS_KEY_ID,
    ...(e.GW_STORAGE === 'aws' ? { storage: 'aws' as const } : {}),
    portkeyHeaders: e.GW_PORTKEY_HEADERS !== 'OFF',
    ...(SECRET_VARIABLES.some((v) => blankAsUnset(env[v]) !== undefined) ? { secrets: secretsOf(e) } : {}),
    cipherKeyFile: e.GW_CIPHER_KEY_FILE ?? (e.GW_DATA_DIR && e.GW_DATA_DIR !== ':memory:' ? `${e.GW_DATA_DIR.replace(/\/+$/, '')}/cipher.key` : undefined),
    // No spool with in-memory data: nothing else of the process survives a restart either.
    ...(e.GW_DATA_DIR && e.GW_DATA_DIR !== ':memory:'
      ? {
          spool: { dir: `${e.GW_DATA_DIR.replace(/\/+$/, '')}/spool`, maxBytes: e.GW_LOG_SPOOL_MAX_MB * 1024 * 1024, fsync: e.GW_LOG_SPOOL_FSYNC === 'ON' },
          queueMaxInMemory: e.GW_QUEUE_MAX_IN_MEMORY,
        }
      : {}),
  };
}
