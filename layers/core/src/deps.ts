/**
 * Everything the core needs from the outside world, built once per process (Lambda container or
 * local server) from the configuration and passed down.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { AppConfig } from './config.ts';
import type { ConfigNode } from './gateway/routing/types.ts';
import type { Principal } from './policy/principal.ts';
import { KeyAuthenticator } from './policy/key-auth.ts';
import { systemClock, type Clock } from './ports/clock.ts';
import { TrustedHosts } from './security/ssrf.ts';
import { createDocumentClient } from './store/db.ts';
import { createRepositories, type Repositories } from './store/repositories.ts';
import { UpstreamClient } from './gateway/upstream.ts';
import { SavedConfigCache } from './gateway/routing/saved-configs.ts';
import { ConfigRepository } from './store/configs.ts';

export interface CoreDeps {
  config: AppConfig;
  clock: Clock;
  repos: Repositories;
  keyAuth: KeyAuthenticator;
  trustedHosts: TrustedHosts;
  upstream: UpstreamClient;
  logger: Logger;
  /** Saved configs as the gateway reads them (cached). */
  savedConfigs: SavedConfigSource;
}

/** Reads a saved config for a gateway request, by id or slug, within the caller's workspace. */
export interface SavedConfigSource {
  forGateway(principal: Principal, idOrSlug: string): Promise<ConfigNode | undefined>;
  /** Drops cached configs after this process changed one. */
  invalidate(): void;
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
    savedConfigs: new SavedConfigCache(new ConfigRepository(repos.table), clock, config.keyCacheTtlMs),
    logger: overrides.logger ?? new Logger({ serviceName: 'gantry', logLevel: logLevel(process.env.LOG_LEVEL) }),
  };
}
