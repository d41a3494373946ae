/**
 * Everything the core needs from the outside world, built once per process (Lambda container or
 * local server) from the configuration and passed down.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { AppConfig } from './config.ts';
import type { ConfigNode } from './gateway/routing/types.ts';
import type { GatewayHook } from './gateway/lifecycle.ts';
import type { Principal } from './policy/principal.ts';
import { KeyAuthenticator } from './policy/key-auth.ts';
import { systemClock, type Clock } from './ports/clock.ts';
import { TrustedHosts } from './security/ssrf.ts';
import { createDocumentClient } from './store/db.ts';
import { createRepositories, type Repositories } from './store/repositories.ts';
import { UpstreamClient } from './gateway/upstream.ts';
import { SavedConfigCache } from './gateway/routing/saved-configs.ts';
import { ConfigRepository } from './store/configs.ts';
import os from 'node:os';
import path from 'node:path';
import type { BlobStore } from './ports/blob.ts';
import { FsBlobStore } from './ports/local/blob-fs.ts';
import { S3BlobStore } from './ports/aws/blob-s3.ts';
import { ResponseCache } from './gateway/cache/response-cache.ts';
import { DynamoVectorIndex, type VectorIndex } from './gateway/cache/semantic.ts';

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
  blobs: BlobStore;
  /** Acts on every gateway request: limits (admit, settle), logging, metrics. In order. */
  gatewayHooks: GatewayHook[];
  responseCache: ResponseCache;
  vectorIndex: VectorIndex;
}

/** Reads a saved config for a gateway request, by id or slug, within the caller's workspace. */
export interface SavedConfigSource {
  forGateway(principal: Principal, idOrSlug: string): Promise<ConfigNode | undefined>;
  /** Drops cached configs after this process changed one. */
  invalidate(): void;
}

export interface DepsOverrides {
  clock?: Clock;
  logger?: Logger;
}

export function createDeps(config: AppConfig, overrides: DepsOverrides = {}): CoreDeps {
  const clock = overrides.clock ?? systemClock;
  const doc = createDocumentClient({ region: config.region, endpoint: config.dynamodbEndpoint });
  const repos = createRepositories(doc, config.tableName);
  const trustedHosts = TrustedHosts.parse(config.trustedCustomHosts);
  const blobs: BlobStore = config.blobBucket
    ? new S3BlobStore({ bucket: config.blobBucket, region: config.region })
    : new FsBlobStore(config.blobDir ?? path.join(os.tmpdir(), 'gantry-blobs'));
  return {
    config,
    clock,
    repos,
    keyAuth: new KeyAuthenticator(repos.apiKeys, clock, { ttlMs: config.keyCacheTtlMs }),
    trustedHosts,
    upstream: new UpstreamClient(trustedHosts),
    savedConfigs: new SavedConfigCache(new ConfigRepository(repos.table), clock, config.keyCacheTtlMs),
    blobs,
    gatewayHooks: [],
    responseCache: new ResponseCache(repos.table, blobs, clock),
    vectorIndex: new DynamoVectorIndex(repos.table, clock),
    logger: overrides.logger ?? new Logger({ serviceName: 'gantry', logLevel: config.logLevel }),
  };
}
