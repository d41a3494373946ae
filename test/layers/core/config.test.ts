/** Reading the configuration from the environment: defaults, flags, and failures naming the variable. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type AppConfig } from '../../../layers/core/src/config.ts';

const BASE = { TABLE_NAME: 'gantry' };

function failure(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('loadConfig accepted the environment');
}

describe('loadConfig', () => {
  it('fills in the defaults when only the table is named', () => {
    expect(loadConfig(BASE)).toEqual<AppConfig>({
      tableName: 'gantry',
      dynamodbEndpoint: undefined,
      region: 'us-east-1',
      trustedCustomHosts: undefined,
      blobBucket: undefined,
      blobDir: undefined,
      upstreamIdleTimeoutMs: 60_000,
      portkeyHeaders: true,
      keyCacheTtlMs: 10_000,
      dynamodbTimeouts: { connectionTimeoutMs: 1_000, requestTimeoutMs: 3_000, maxAttempts: 2 },
      logLevel: 'WARN',
      features: {
        guardrails: true,
        apiAccess: true,
        dataExports: true,
        usageLimits: true,
        auditLogs: true,
        scim: true,
        policy: true,
      },
      logRetentionDays: 90,
      metricsRetentionDays: 365,
      requestLogs: true,
      emfMetrics: false,
      mailFrom: undefined,
      outboxDir: undefined,
      queueUrls: {},
      cipherKmsKeyId: undefined,
      cipherKeyFile: undefined,
      jwt: undefined,
      publicUrl: undefined,
      inviteTtlMs: 7 * 86_400_000,
      keyLifecycleIntervalMs: 60_000,
    });
  });

  it('sends the per-request AWS calls through the lean client unless GW_LEAN_AWS_CALLS=OFF', () => {
    expect(loadConfig(BASE).leanAwsCalls).toBeUndefined();
    expect(loadConfig({ ...BASE, GW_LEAN_AWS_CALLS: 'on' }).leanAwsCalls).toBeUndefined();
    expect(loadConfig({ ...BASE, GW_LEAN_AWS_CALLS: 'OFF' }).leanAwsCalls).toBe(false);
    expect(failure({ ...BASE, GW_LEAN_AWS_CALLS: 'sometimes' }).message).toContain('GW_LEAN_AWS_CALLS');
  });

  it('reads the JWT settings, and GW_JWKS_URL needs an issuer and an audience', () => {
    const config = loadConfig({
      ...BASE,
      GW_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json',
      GW_JWT_ISSUER: 'https://idp.example.com/',
      GW_JWT_AUDIENCE: 'gantry, gantry-admin',
      GW_JWKS_CACHE_SECONDS: '60',
      GW_JWKS_COOLDOWN_SECONDS: '0',
    });
    expect(config.jwt).toEqual({
      jwksUrl: 'https://idp.example.com/.well-known/jwks.json',
      issuer: 'https://idp.example.com/',
      audience: ['gantry', 'gantry-admin'],
      cacheMaxAgeMs: 60_000,
      cooldownMs: 0,
    });
    expect(failure({ ...BASE, GW_JWKS_URL: 'https://idp.example.com/jwks' }).message).toContain('GW_JWT_ISSUER');
    expect(failure({ ...BASE, GW_JWKS_URL: 'https://idp.example.com/jwks', GW_JWT_ISSUER: 'x' }).message).toContain('GW_JWT_AUDIENCE');
    expect(failure({ ...BASE, GW_JWKS_URL: 'not a url' }).message).toContain('GW_JWKS_URL');
  });

  it('reads every variable it knows', () => {
    const config = loadConfig({
      TABLE_NAME: 't',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000',
      AWS_REGION: 'eu-west-1',
      GW_TRUSTED_CUSTOM_HOSTS: 'localhost,10.0.0.0/8',
      GW_KEY_CACHE_TTL_SECONDS: '30',
      LOG_RETENTION_DISPLAY: '30',
      METRICS_RETENTION_DISPLAY: '400',
      MAIL_FROM: 'alerts@example.com',
      GW_OUTBOX_DIR: '/tmp/outbox',
      QUEUE_URL_LOG_EVENTS: 'https://sqs.eu-west-1.amazonaws.com/123456789012/log-events',
      QUEUE_URL_EMPTY: '',
    });
    expect(config).toMatchObject({
      tableName: 't',
      dynamodbEndpoint: 'http://127.0.0.1:8000',
      region: 'eu-west-1',
      trustedCustomHosts: 'localhost,10.0.0.0/8',
      keyCacheTtlMs: 30_000,
      logRetentionDays: 30,
      metricsRetentionDays: 400,
      mailFrom: 'alerts@example.com',
      outboxDir: '/tmp/outbox',
      queueUrls: { QUEUE_URL_LOG_EVENTS: 'https://sqs.eu-west-1.amazonaws.com/123456789012/log-events' },
    });
  });

  it('ignores variables it does not know', () => {
    expect(loadConfig({ ...BASE, PATH: '/usr/bin', LOG_LEVEL: 'DEBUG' }).tableName).toBe('gantry');
  });

  it('accepts the cache TTL bounds 0 and 300 seconds', () => {
    expect(loadConfig({ ...BASE, GW_KEY_CACHE_TTL_SECONDS: '0' }).keyCacheTtlMs).toBe(0);
    expect(loadConfig({ ...BASE, GW_KEY_CACHE_TTL_SECONDS: '300' }).keyCacheTtlMs).toBe(300_000);
  });

  const FLAGS = [
    ['GUARDRAILS_ENABLED', 'guardrails'],
    ['API_ACCESS_ENABLED', 'apiAccess'],
    ['DATA_EXPORTS_ENABLED', 'dataExports'],
    ['USAGE_LIMITS_ENABLED', 'usageLimits'],
    ['AUDIT_LOGS_ENABLED', 'auditLogs'],
    ['SCIM_ENABLED', 'scim'],
    ['POLICY_ENABLED', 'policy'],
  ] as const;

  describe.each(FLAGS)('%s', (variable, flag) => {
    it.each(['OFF', 'off', 'false', '0'])('is off for %s, and only that flag', (value) => {
      const { features } = loadConfig({ ...BASE, [variable]: value });
      expect(features[flag]).toBe(false);
      for (const [, other] of FLAGS) if (other !== flag) expect(features[other]).toBe(true);
    });

    it.each(['ON', 'on', 'true', '1'])('is on for %s', (value) => {
      expect(loadConfig({ ...BASE, [variable]: value }).features[flag]).toBe(true);
    });

    it('fails naming the variable for a value that is neither on nor off', () => {
      expect(failure({ ...BASE, [variable]: 'maybe' }).message).toContain(variable);
    });
  });

  it('fails naming TABLE_NAME when it is missing or empty', () => {
    for (const env of [{}, { TABLE_NAME: '' }]) {
      const err = failure(env);
      expect(err.name).toBe('ConfigError');
      expect(err.message).toContain('TABLE_NAME');
    }
  });

  it.each([
    ['GW_KEY_CACHE_TTL_SECONDS', 'ten'],
    ['GW_KEY_CACHE_TTL_SECONDS', '-1'],
    ['GW_KEY_CACHE_TTL_SECONDS', '301'],
    ['GW_KEY_CACHE_TTL_SECONDS', '1.5'],
    ['LOG_RETENTION_DISPLAY', '0'],
    ['LOG_RETENTION_DISPLAY', 'forever'],
    ['METRICS_RETENTION_DISPLAY', '7.5'],
    ['DYNAMODB_ENDPOINT', 'not a url'],
    ['MAIL_FROM', 'Gantry <alerts@example.com>'],
    ['QUEUE_URL_ALERTS', 'not a url'],
  ])('fails naming %s for %j', (variable, value) => {
    const err = failure({ ...BASE, [variable]: value });
    expect(err.message).toContain(variable);
    expect(err.message).not.toContain('TABLE_NAME');
  });

  it('names every bad variable at once', () => {
    const err = failure({ GW_KEY_CACHE_TTL_SECONDS: 'x', SCIM_ENABLED: 'nope' });
    for (const v of ['TABLE_NAME', 'GW_KEY_CACHE_TTL_SECONDS', 'SCIM_ENABLED']) expect(err.message).toContain(v);
  });
});
