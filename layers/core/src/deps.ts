/**
 * Everything the core needs from the outside world, built once per process (Lambda container or
 * local server) from the configuration and passed down.
 */
import { secretsConfig, type AppConfig } from './config.ts';
import type { GatewayHook } from './kernel/lifecycle.ts';
import { createKeyAuthenticator, type KeyAuthenticator } from './policy/key-auth.ts';
import type { RuntimeAdapters } from './ports/adapters.ts';
import { systemClock, type Clock } from './ports/clock.ts';
import type { Logger } from './ports/logger.ts';
import { TrustedHosts } from './security/ssrf.ts';
import { createDocumentClient } from './store/db.ts';
import { createRepositories, type Repositories } from './store/repositories.ts';
import { UpstreamClient } from './gateway/upstream.ts';
import type { Upstream } from './ports/upstream.ts';
import { SavedConfigCache, type SavedConfigSource } from './gateway/routing/saved-configs.ts';
import { ConfigRepository } from './store/configs.ts';
import type { BatchRunner } from './ports/batch-runner.ts';
import type { BlobStore } from './ports/blob.ts';
import type { Mailer } from './ports/mailer.ts';
import type { QueueFactory } from './ports/queue-factory.ts';
import { ResponseCache } from './gateway/cache/response-cache.ts';
import { DynamoVectorIndex, type VectorIndex } from './gateway/cache/semantic.ts';
import { PriceBook, pricingHook } from './pricing/price-book.ts';
import { createLimits, type LimitsRuntime } from './policy/limits/runtime.ts';
import { CustomPriceRepository } from './store/custom-prices.ts';
import type { Cipher } from './ports/cipher.ts';
import { ManagedProviderCache, type ManagedProviderSource } from './gateway/managed.ts';
import type { FetchCredentials } from './providers/transform.ts';
import { observabilityHooks } from './observability/hooks.ts';
import type { GuardrailSource } from './kernel/guardrails.ts';
import type { PromptSource } from './prompts/contract.ts';
import { SavedGuardrailCache } from './guardrails/saved.ts';
import { GuardrailRepository } from './store/guardrails.ts';
import { SecretResolver } from './secrets/resolver.ts';
import { lazySecretManagers } from './secrets/lazy.ts';
import { StoredPromptSource } from './prompts/source.ts';

export interface CoreDeps {
  config: AppConfig;
  clock: Clock;
  repos: Repositories;
  keyAuth: KeyAuthenticator;
  trustedHosts: TrustedHosts;
  upstream: Upstream;
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
  /** Saved guardrails that config hooks name by id or slug (cached); absent, naming one is a 400. */
  guardrails?: GuardrailSource;
  /** Secret references' values at request time (cached per instance; docs/secret-references.md). */
  secrets: SecretResolver;
  /** Prompts and partials by reference (cached: versions freely, label and default pointers at most 5 s). */
  prompts?: PromptSource;
  /** Starts batches run by the gateway (batches/engine.ts); absent, creating one is a 503. */
  batchRunner?: BatchRunner;
}

export type { SavedConfigSource } from './gateway/routing/saved-configs.ts';

/** What a runtime may pass beside the adapters it must (tests override some). */
export type DepsOverrides = Partial<RuntimeAdapters>;

/** STS with the runtime's credentials, its code imported on first use (aws_sm references with a role). */
const lazyRuntimeAssumeRole =
  (clock: Clock): FetchCredentials =>
  async (input) =>
    (await import('./providers/native/aws.ts')).runtimeAssumeRole({ clock })(input);

/** The core's dependencies from the configuration and the runtime's adapters. */
export function createDeps(config: AppConfig, adapters: RuntimeAdapters): CoreDeps {
  const clock = adapters.clock ?? systemClock;
  const { blobs, mailer, queues, cipher, logger } = adapters;
  const doc = createDocumentClient({
    region: config.region,
    endpoint: config.dynamodbEndpoint,
    timeouts: config.dynamodbTimeouts,
    lean: config.leanAwsCalls ?? true,
  });
  const repos = createRepositories(doc, config.tableName);
  const trustedHosts = TrustedHosts.parse(config.trustedCustomHosts);
  // The table's endpoint is the service's own, from the first request on, in every runtime.
  trustedHosts.reserveOwnEndpoint(config.dynamodbEndpoint);
  const pricing = new PriceBook(new CustomPriceRepository(repos.table), clock, config.keyCacheTtlMs);
  const limits = createLimits({ repos, clock, config, queues, logger, pricing });
  const upstream = adapters.upstream ?? new UpstreamClient(trustedHosts, { idleTimeoutMs: config.upstreamIdleTimeoutMs });
  const managers =
    adapters.secretManagers ??
    lazySecretManagers({
      config: secretsConfig(config),
      region: config.region,
      upstream,
      trustedHosts,
      clock,
      assumeRole: (input) => (deps.assumeRole ?? lazyRuntimeAssumeRole(clock))(input),
    });
  const deps: CoreDeps = {
    config,
    clock,
    repos,
    keyAuth: createKeyAuthenticator(config, repos, clock),
    trustedHosts,
    upstream,
    savedConfigs: new SavedConfigCache(new ConfigRepository(repos.table), clock, config.keyCacheTtlMs, cipher),
    guardrails: new SavedGuardrailCache(new GuardrailRepository(repos.table), clock, config.keyCacheTtlMs),
    prompts: new StoredPromptSource(repos.table, clock, config.keyCacheTtlMs),
    blobs,
    mailer,
    queues,
    // Pricing first: the hooks after it (limits, then logs and metrics) read record.costMicros.
    gatewayHooks: [pricingHook(pricing), limits.hook, ...observabilityHooks({ config, queues, blobs, clock, logger, pricing })],
    responseCache: new ResponseCache(repos.table, blobs, clock),
    vectorIndex: new DynamoVectorIndex(repos.table, clock),
    pricing,
    limits,
    cipher,
    managedProviders: new ManagedProviderCache(repos.table, cipher, clock, { ttlMs: config.keyCacheTtlMs }),
    secrets: new SecretResolver({
      table: repos.table,
      cipher,
      clock,
      logger,
      managers,
      referenceTtlMs: config.keyCacheTtlMs,
      valueTtlMs: secretsConfig(config).valueTtlMs,
    }),
    logger,
  };
  if (adapters.batchRunner) deps.batchRunner = adapters.batchRunner(deps);
  return deps;
}
