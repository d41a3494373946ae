/**
 * Everything the core needs from the outside world, built once per process (Lambda container or
 * local server) from the configuration and passed down.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { AppConfig } from './config.ts';
import type { ConfigNode } from './gateway/routing/types.ts';
import type { GatewayHook } from './gateway/lifecycle.ts';
import type { Principal } from './policy/principal.ts';
import { createKeyAuthenticator, type KeyAuthenticator } from './policy/key-auth.ts';
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
import type { Mailer } from './ports/mailer.ts';
import { OutboxMailer } from './ports/local/outbox-mailer.ts';
import { SesMailer } from './ports/aws/ses-mailer.ts';
import { LocalQueueFactory, SqsQueueFactory, type QueueFactory } from './ports/queue-factory.ts';
import { ResponseCache } from './gateway/cache/response-cache.ts';
import { DynamoVectorIndex, type VectorIndex } from './gateway/cache/semantic.ts';
import { PriceBook, pricingHook } from './pricing/price-book.ts';
import { createLimits, type LimitsRuntime } from './policy/limits/runtime.ts';
import { CustomPriceRepository } from './pricing/custom-prices.ts';
import { unconfiguredCipher, type Cipher } from './ports/cipher.ts';
import { FileCipher } from './ports/local/cipher-file.ts';
import { KmsCipher } from './ports/aws/cipher-kms.ts';
import { ManagedProviderCache, type ManagedProviderSource } from './gateway/managed.ts';
import type { FetchCredentials } from './providers/transform.ts';
import { installObservability } from './observability/hooks.ts';

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
  mailer: Mailer;
  /** Queues by name: SQS in AWS (`QUEUE_URL_<NAME>`), in-process locally. */
  queues: QueueFactory;
  /** Acts on every gateway request: limits (admit, settle), logging, metrics. In order. */
  gatewayHooks: GatewayHook[];
  responseCache: ResponseCache;
  vectorIndex: VectorIndex;
  /** Effective model prices (custom over catalog), cached; `costFor` and the pricing hook read it. */
  pricing: PriceBook;
  /** Rate limits and budgets: policies (cached), counters, the limits hook, alerts. */
  limits: LimitsRuntime;
  /** Encrypts provider credentials before they reach the table (KMS in AWS, a key file locally). */
  cipher: Cipher;
  /** Managed providers and virtual keys as the gateway reads them (cached, credentials decrypted). */
  managedProviders: ManagedProviderSource;
  /**
   * Assumes an integration's AWS role with the gateway's own credentials (Bedrock); absent: STS with
   * the runtime's credential chain, loaded on first use. Tests set their own.
   */
  assumeRole?: FetchCredentials;
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
  /** Outbound HTTP to providers (tests point it at a mock). */
  upstream?: UpstreamClient;
  cipher?: Cipher;
}

export function createDeps(config: AppConfig, overrides: DepsOverrides = {}): CoreDeps {
  const clock = overrides.clock ?? systemClock;
  const doc = createDocumentClient({ region: config.region, endpoint: config.dynamodbEndpoint });
  const repos = createRepositories(doc, config.tableName);
  const trustedHosts = TrustedHosts.parse(config.trustedCustomHosts);
  const blobs: BlobStore = config.blobBucket
    ? new S3BlobStore({ bucket: config.blobBucket, region: config.region })
    : new FsBlobStore(config.blobDir ?? path.join(os.tmpdir(), 'gantry-blobs'));
  // No DynamoDB endpoint override means AWS; locally nothing is mailed or sent to SQS.
  const inAws = config.dynamodbEndpoint === undefined;
  const mailer: Mailer =
    inAws && config.mailFrom
      ? new SesMailer({ from: config.mailFrom, region: config.region })
      : new OutboxMailer(config.outboxDir ?? path.join(os.tmpdir(), 'gantry-outbox'), clock);
  const queues: QueueFactory = inAws
    ? new SqsQueueFactory({ queueUrls: config.queueUrls, region: config.region })
    : // Queue timing (batching, redelivery backoff) is not business time: it always runs on real
      // timers, never on an injected test clock, which it would otherwise move.
      new LocalQueueFactory({});
  const pricing = new PriceBook(new CustomPriceRepository(repos.table), clock, config.keyCacheTtlMs);
  const logger = overrides.logger ?? new Logger({ serviceName: 'gantry', logLevel: config.logLevel });
  const limits = createLimits({ repos, clock, config, queues, logger, pricing });
  // In AWS a key file would vanish with the container: there only CIPHER_KMS_KEY_ID (or an explicit file) will do.
  const cipher: Cipher =
    overrides.cipher ??
    (config.cipherKmsKeyId
      ? new KmsCipher({ keyId: config.cipherKmsKeyId, region: config.region })
      : inAws && !config.cipherKeyFile
        ? unconfiguredCipher('No credential cipher is configured: set CIPHER_KMS_KEY_ID (or GW_CIPHER_KEY_FILE)')
        : new FileCipher({ keyFile: config.cipherKeyFile }));
  const deps: CoreDeps = {
    config,
    clock,
    repos,
    keyAuth: createKeyAuthenticator(config, repos, clock),
    trustedHosts,
    upstream: overrides.upstream ?? new UpstreamClient(trustedHosts),
    savedConfigs: new SavedConfigCache(new ConfigRepository(repos.table), clock, config.keyCacheTtlMs),
    blobs,
    mailer,
    queues,
    // Pricing first: the hooks after it (limits, logs, metrics) read record.costMicros.
    gatewayHooks: [pricingHook(pricing), limits.hook],
    responseCache: new ResponseCache(repos.table, blobs, clock),
    vectorIndex: new DynamoVectorIndex(repos.table, clock),
    pricing,
    limits,
    cipher,
    managedProviders: new ManagedProviderCache(repos.table, cipher, clock, { ttlMs: config.keyCacheTtlMs }),
    logger,
  };
  // Logging and metrics come after pricing and limits.
  installObservability(deps);
  return deps;
}
