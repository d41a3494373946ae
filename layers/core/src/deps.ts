/**
 * Everything the core needs from the outside world, built once per process (Lambda container or
 * local server) from the configuration and passed down.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { AppConfig } from './config.ts';
import { KeyAuthenticator } from './policy/key-auth.ts';
import { systemClock, type Clock } from './ports/clock.ts';
import { TrustedHosts } from './security/ssrf.ts';
import { createDocumentClient } from './store/db.ts';
import { createRepositories, type Repositories } from './store/repositories.ts';
import { UpstreamClient } from './gateway/upstream.ts';

export interface CoreDeps {
  config: AppConfig;
  clock: Clock;
  repos: Repositories;
  keyAuth: KeyAuthenticator;
  trustedHosts: TrustedHosts;
  upstream: UpstreamClient;
  logger: Logger;
}

const LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'] as const;
type Level = (typeof LEVELS)[number];
const logLevel = (raw: string | undefined): Level =>
  (LEVELS as readonly string[]).includes(raw?.toUpperCase() ?? '') ? (raw?.toUpperCase() as Level) : 'WARN';

export interface DepsOverrides {
  clock?: Clock;
  logger?: Logger;
}

export function createDeps(config: AppConfig, overrides: DepsOverrides = {}): CoreDeps {
  const clock = overrides.clock ?? systemClock;
  const doc = createDocumentClient({ region: config.region, endpoint: config.dynamodbEndpoint });
  const repos = createRepositories(doc, config.tableName);
  const trustedHosts = TrustedHosts.parse(config.trustedCustomHosts);
  return {
    config,
    clock,
    repos,
    keyAuth: new KeyAuthenticator(repos.apiKeys, clock, { ttlMs: config.keyCacheTtlMs }),
    trustedHosts,
    upstream: new UpstreamClient(trustedHosts),
    logger: overrides.logger ?? new Logger({ serviceName: 'gantry', logLevel: logLevel(process.env.LOG_LEVEL) }),
  };
}
