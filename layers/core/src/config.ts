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
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
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
  };
}
