/**
 * Configuration is read once from the environment, validated, and passed down. A missing or bad
 * variable fails at start with its name.
 */
import * as z from 'zod';

/** An unset or empty variable counts as absent, so defaults apply (never a silent 0). */
const blankAsUnset = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);

const onOff = z.preprocess(
  (v) => (typeof v === 'string' ? blankAsUnset(v.trim().toUpperCase()) : v),
  z
    .enum(['ON', 'OFF', 'TRUE', 'FALSE', '1', '0'])
    .optional()
    .transform((v) => v === undefined || !['OFF', 'FALSE', '0'].includes(v)),
);

const envSchema = z.object({
  TABLE_NAME: z.string().min(1),
  /** DynamoDB endpoint override (DynamoDB Local); absent in AWS. */
  DYNAMODB_ENDPOINT: z.url().optional(),
  AWS_REGION: z.string().min(1).default('us-east-1'),
  GW_TRUSTED_CUSTOM_HOSTS: z.string().optional(),
  /** Blob storage: an S3 bucket in AWS, else a directory (local runtime). */
  BLOB_BUCKET: z.string().min(1).optional(),
  GW_BLOB_DIR: z.string().min(1).optional(),
  /** Mail: the SES sender address in AWS; without it (or locally) mail goes to the outbox directory. */
  MAIL_FROM: z.preprocess(blankAsUnset, z.email().optional()),
  GW_OUTBOX_DIR: z.string().min(1).optional(),
  /** Credential encryption: a KMS key in AWS; else a local key file (GW_CIPHER_KEY_FILE, or cipher.key in GW_DATA_DIR). */
  CIPHER_KMS_KEY_ID: z.preprocess(blankAsUnset, z.string().min(1).optional()),
  GW_CIPHER_KEY_FILE: z.preprocess(blankAsUnset, z.string().min(1).optional()),
  GW_DATA_DIR: z.preprocess(blankAsUnset, z.string().min(1).optional()),
  LOG_LEVEL: z
    .string()
    .optional()
    .transform((v) => v?.toUpperCase())
    .pipe(z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']).default('WARN')),
  /** Seconds a warm API key is served from the in-process cache before it is re-read. */
  GW_KEY_CACHE_TTL_SECONDS: z.preprocess(blankAsUnset, z.coerce.number().int().min(0).max(300).default(10)),
  GUARDRAILS_ENABLED: onOff,
  API_ACCESS_ENABLED: onOff,
  DATA_EXPORTS_ENABLED: onOff,
  USAGE_LIMITS_ENABLED: onOff,
  AUDIT_LOGS_ENABLED: onOff,
  SCIM_ENABLED: onOff,
  POLICY_ENABLED: onOff,
  LOG_RETENTION_DISPLAY: z.preprocess(blankAsUnset, z.coerce.number().int().min(1).default(90)),
  METRICS_RETENTION_DISPLAY: z.preprocess(blankAsUnset, z.coerce.number().int().min(1).default(365)),
  /** Request logs (the `logging` gateway hook); OFF sends no log events. */
  GW_REQUEST_LOGS: onOff,
  /** CloudWatch EMF metrics on stdout (the `metrics` gateway hook); ON in Lambda, off locally unless asked. */
  GW_EMF_METRICS: z.preprocess((v) => (typeof v === 'string' ? blankAsUnset(v.trim().toUpperCase()) : v), z.enum(['ON', 'OFF']).default('OFF')),
  /** JWT authentication: the JWKS URL turns it on; issuer and audience are then required. */
  GW_JWKS_URL: z.preprocess(blankAsUnset, z.url().optional()),
  GW_JWT_ISSUER: z.preprocess(blankAsUnset, z.string().min(1).optional()),
  /** One audience or several, comma-separated. */
  GW_JWT_AUDIENCE: z.preprocess(blankAsUnset, z.string().min(1).optional()),
  GW_JWKS_CACHE_SECONDS: z.preprocess(blankAsUnset, z.coerce.number().int().min(0).default(600)),
  /** How soon an unknown key id may trigger another JWKS fetch (rotated keys). */
  GW_JWKS_COOLDOWN_SECONDS: z.preprocess(blankAsUnset, z.coerce.number().int().min(0).default(30)),
  /** The base URL invite links point at (e.g. https://gantry.example.com); else the request's origin. */
  GW_PUBLIC_URL: z.preprocess(blankAsUnset, z.url().optional()),
  GW_INVITE_TTL_HOURS: z.preprocess(blankAsUnset, z.coerce.number().int().min(1).max(720).default(168)),
  /** Local runtime: how often the key lifecycle (expiry, rotation, usage resets, alerts) runs. */
  GW_KEY_LIFECYCLE_INTERVAL_SECONDS: z.preprocess(blankAsUnset, z.coerce.number().int().min(0).default(60)),
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
  logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  features: FeatureFlags;
  logRetentionDays: number;
  metricsRetentionDays: number;
  /** Whether gateway requests are logged, and whether EMF metrics are written. */
  requestLogs: boolean;
  emfMetrics: boolean;
  /** JWT authentication; undefined when GW_JWKS_URL is not set. */
  jwt: JwtConfig | undefined;
  publicUrl: string | undefined;
  inviteTtlMs: number;
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
}

/** Queue URLs come in one variable per queue, so they are picked out by prefix. */
const queueUrlsSchema = z.record(z.string(), z.url());
const queueUrlVariables = (env: Record<string, string | undefined>) =>
  Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith('QUEUE_URL_') && blankAsUnset(v) !== undefined));

export interface JwtConfig {
  jwksUrl: string;
  issuer: string;
  audience: string[];
  cacheMaxAgeMs: number;
  cooldownMs: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const parsed = envSchema.safeParse(env);
  const queueUrls = queueUrlsSchema.safeParse(queueUrlVariables(env));
  if (!parsed.success || !queueUrls.success) {
    const issues = [...(parsed.error?.issues ?? []), ...(queueUrls.error?.issues ?? [])];
    const problems = issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  if (e.GW_JWKS_URL && (!e.GW_JWT_ISSUER || !e.GW_JWT_AUDIENCE)) {
    throw new ConfigError(`Invalid configuration: GW_JWKS_URL needs ${!e.GW_JWT_ISSUER ? 'GW_JWT_ISSUER' : 'GW_JWT_AUDIENCE'} too`);
  }
  return {
    tableName: e.TABLE_NAME,
    dynamodbEndpoint: e.DYNAMODB_ENDPOINT,
    region: e.AWS_REGION,
    trustedCustomHosts: e.GW_TRUSTED_CUSTOM_HOSTS,
    blobBucket: e.BLOB_BUCKET,
    blobDir: e.GW_BLOB_DIR,
    keyCacheTtlMs: e.GW_KEY_CACHE_TTL_SECONDS * 1000,
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
            audience: e.GW_JWT_AUDIENCE.split(',').map((a) => a.trim()).filter(Boolean),
            cacheMaxAgeMs: e.GW_JWKS_CACHE_SECONDS * 1000,
            cooldownMs: e.GW_JWKS_COOLDOWN_SECONDS * 1000,
          }
        : undefined,
    publicUrl: e.GW_PUBLIC_URL,
    inviteTtlMs: e.GW_INVITE_TTL_HOURS * 3_600_000,
    keyLifecycleIntervalMs: e.GW_KEY_LIFECYCLE_INTERVAL_SECONDS * 1000,
    mailFrom: e.MAIL_FROM,
    outboxDir: e.GW_OUTBOX_DIR,
    queueUrls: queueUrls.data,
    cipherKmsKeyId: e.CIPHER_KMS_KEY_ID,
    cipherKeyFile: e.GW_CIPHER_KEY_FILE ?? (e.GW_DATA_DIR && e.GW_DATA_DIR !== ':memory:' ? `${e.GW_DATA_DIR.replace(/\/+$/, '')}/cipher.key` : undefined),
  };
}
