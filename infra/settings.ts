/**
 * Deployment settings: read once from CDK context (`-c gantry:<name>=<value>` or the `context`
 * block of cdk.json), validated, and passed to the stacks. A bad value stops synth with its
 * context key. Every setting is in the table of docs/deploy.md.
 */
import * as z from 'zod';

/** Functions whose memory can be set with `gantry:memory:<name>`. */
export const FUNCTION_NAMES = [
  'gateway',
  'admin',
  'log-ingest',
  'log-export',
  'limits-alerts',
  'usage-reset',
  'key-lifecycle',
  'bootstrap',
  'realtime',
  'batch',
  'mcp-sync',
] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

/** Memory (MB) each function gets unless `gantry:memory:<name>` says otherwise. */
export const DEFAULT_MEMORY_MB: Readonly<Record<FunctionName, number>> = {
  // Billed while it waits for the model: measured at about 110 MB resident under load, so 256 MB
  // leaves headroom without paying for idle gigabytes (docs/deploy.md, "Cost").
  gateway: 256,
  admin: 512,
  'log-ingest': 512,
  'log-export': 1024,
  'limits-alerts': 256,
  'usage-reset': 256,
  'key-lifecycle': 256,
  bootstrap: 256,
  // Holds provider sockets and relays JSON events; no audio is decoded.
  realtime: 512,
  batch: 512,
  // Waits on MCP servers' answers; a discovery holds a few tool lists.
  'mcp-sync': 256,
};

/** Feature flags by setting name and the variable each one sets (all on unless listed). */
export const FEATURE_VARIABLES = {
  guardrails: 'GUARDRAILS_ENABLED',
  api_access: 'API_ACCESS_ENABLED',
  data_exports: 'DATA_EXPORTS_ENABLED',
  usage_limits: 'USAGE_LIMITS_ENABLED',
  audit_logs: 'AUDIT_LOGS_ENABLED',
  scim: 'SCIM_ENABLED',
  policy: 'POLICY_ENABLED',
} as const;
type Feature = keyof typeof FEATURE_VARIABLES;

export interface GantrySettings {
  /** Prefix of every stack name and of the dashboard: `<prefix>-Data`, `<prefix>-Api`, ... */
  readonly prefix: string;
  readonly jwt: { jwksUrl: string; issuer: string; audience: string } | undefined;
  readonly disabledFeatures: readonly Feature[];
  readonly trustedCustomHosts: string | undefined;
  /** Browser origins (comma-separated, or `*`) that may call the MCP gateway besides its own. */
  readonly mcpAllowedOrigins: string | undefined;
  readonly publicUrl: string | undefined;
  readonly mailFrom: string | undefined;
  readonly alarmEmail: string | undefined;
  readonly logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  readonly memoryMb: Readonly<Record<FunctionName, number>>;
  readonly gatewayReservedConcurrency: number | undefined;
  /** IAM roles the gateway may assume for Bedrock integrations that name a role (nothing else). */
  readonly assumableRoleArns: readonly string[];
  /** Secrets Manager names the gateway may read for aws_sm secret references (`gantry/*`). */
  readonly secretsPrefix: string;
  /** Which relay serves realtime sessions on AWS: the Lambda function (no idle cost) or the Fargate service (docs/realtime.md). */
  readonly realtimeRelay: 'lambda' | 'fargate';
}

/** Context values from the command line are strings; cdk.json may hold numbers, lists or booleans. */
const text = z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), z.string().trim().optional());
const list = z.preprocess(
  (v) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : v,
  z.array(z.string()).optional(),
);
const int = (min: number, max: number) =>
  z.preprocess((v) => (v === undefined || v === '' ? undefined : Number(v)), z.number().int().min(min).max(max).optional());

const SCHEMA = {
  prefix: text.pipe(
    z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9-]{0,39}$/, 'letters, digits and dashes, starting with a letter, at most 40')
      .optional(),
  ),
  jwksUrl: text.pipe(z.url().optional()),
  jwtIssuer: text,
  jwtAudience: text,
  disabledFeatures: list.pipe(z.array(z.enum(Object.keys(FEATURE_VARIABLES) as [Feature, ...Feature[]])).optional()),
  trustedCustomHosts: text,
  mcpAllowedOrigins: text,
  publicUrl: text.pipe(z.url().optional()),
  mailFrom: text.pipe(z.email().optional()),
  alarmEmail: text.pipe(z.email().optional()),
  logLevel: text.pipe(z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']).optional()),
  gatewayReservedConcurrency: int(1, 10_000),
  secretsPrefix: text.pipe(
    z
      .string()
      .regex(/^[A-Za-z0-9/_+=.@*-]{1,512}$/, 'must be a Secrets Manager name pattern such as gantry/* (letters, digits, / _ + = . @ - and *)')
      .optional(),
  ),
  realtimeRelay: text.pipe(z.enum(['lambda', 'fargate']).optional()),
  assumableRoleArns: list.pipe(
    z.array(z.string().regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/*-]+$/, 'must be IAM role ARNs (arn:aws:iam::<account>:role/<name>)')).optional(),
  ),
};
// Lambda's limits: 128 MB to 10 GB.
const MEMORY = int(128, 10_240);

export class SettingsError extends Error {
  override name = 'SettingsError';
}

/** Reads the settings from a context lookup (`app.node.tryGetContext`). */
export function readSettings(context: (key: string) => unknown): GantrySettings {
  const problems: string[] = [];
  const read = <T>(key: string, schema: z.ZodType<T>): T | undefined => {
    const raw = context(`gantry:${key}`);
    const parsed = schema.safeParse(raw);
    if (parsed.success) return parsed.data;
    problems.push(`gantry:${key}: ${parsed.error.issues.map((i) => i.message).join(', ')}`);
    return undefined;
  };
  const v = Object.fromEntries(Object.entries(SCHEMA).map(([k, s]) => [k, read(k, s as z.ZodType<unknown>)])) as {
    [K in keyof typeof SCHEMA]: z.output<(typeof SCHEMA)[K]>;
  };
  const memoryMb = { ...DEFAULT_MEMORY_MB };
  for (const name of FUNCTION_NAMES) {
    const mb = read(`memory:${name}`, MEMORY);
    if (mb !== undefined) memoryMb[name] = mb;
  }
  const jwtParts = [v.jwksUrl, v.jwtIssuer, v.jwtAudience];
  if (jwtParts.some(Boolean) && !jwtParts.every(Boolean)) {
    problems.push('gantry:jwksUrl, gantry:jwtIssuer and gantry:jwtAudience go together: set all three or none');
  }
  if (problems.length > 0) throw new SettingsError(`Invalid deployment settings: ${problems.join('; ')}`);
  return {
    prefix: v.prefix ?? 'Gantry',
    jwt: v.jwksUrl && v.jwtIssuer && v.jwtAudience ? { jwksUrl: v.jwksUrl, issuer: v.jwtIssuer, audience: v.jwtAudience } : undefined,
    disabledFeatures: v.disabledFeatures ?? [],
    trustedCustomHosts: v.trustedCustomHosts,
    mcpAllowedOrigins: v.mcpAllowedOrigins,
    publicUrl: v.publicUrl,
    mailFrom: v.mailFrom,
    alarmEmail: v.alarmEmail,
    logLevel: v.logLevel ?? 'WARN',
    memoryMb,
    gatewayReservedConcurrency: v.gatewayReservedConcurrency,
    assumableRoleArns: v.assumableRoleArns ?? [],
    secretsPrefix: v.secretsPrefix ?? 'gantry/*',
    realtimeRelay: v.realtimeRelay ?? 'lambda',
  };
}

/** The runtime variables (layers/core/src/config.ts) every function gets from the settings (GW_PUBLIC_URL goes to the admin function only). */
export function runtimeEnvironment(s: GantrySettings): Record<string, string> {
  const env: Record<string, string> = { LOG_LEVEL: s.logLevel };
  for (const f of s.disabledFeatures) env[FEATURE_VARIABLES[f]] = 'OFF';
  if (s.jwt) Object.assign(env, { GW_JWKS_URL: s.jwt.jwksUrl, GW_JWT_ISSUER: s.jwt.issuer, GW_JWT_AUDIENCE: s.jwt.audience });
  if (s.trustedCustomHosts) env.GW_TRUSTED_CUSTOM_HOSTS = s.trustedCustomHosts;
  if (s.mcpAllowedOrigins) env.GW_MCP_ALLOWED_ORIGINS = s.mcpAllowedOrigins;
  return env;
}
