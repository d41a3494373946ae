/**
 * Four test lanes (vitest projects), each setting up only what it needs:
 * - unit: pure modules; no Java, no console build, no network but loopback servers a test starts.
 *   `npm run test:unit`. Its DynamoDB endpoint is a tripwire that fails any call with a message
 *   saying which list the file belongs in (test/support/unit-setup.ts, unit-guard.ts).
 * - integration: the CDK stacks (test/infra) and the files outside test/e2e that need DynamoDB
 *   Local (or Java, or Docker): INTEGRATION.
 * - e2e: test/e2e, the local server in front of mock providers, on DynamoDB Local.
 * - browser: the console in Chromium and its bundle; builds dist/console/ when its sources changed.
 * `npm test` runs every lane; DynamoDB Local is started once for all lanes that need it.
 */
import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The CDK stacks synthesized with their bundles (test/infra, tens of seconds a file), and outside
 * test/e2e the files that use DynamoDB Local (createTestDeps, startGantry, inject('dynamodbEndpoint'),
 * startDynamoDBLocal).
 */
const INTEGRATION = [
  'test/infra/**/*.test.ts',
  'test/bench/ddb-local-store.test.ts',
  'test/docs/limits-examples.test.ts',
  'test/lambdas/admin/handler.test.ts',
  'test/lambdas/gateway/handler.test.ts',
  'test/lambdas/local/dynamodb-local.test.ts',
  'test/lambdas/local/log-ingest-process.test.ts',
  'test/lambdas/realtime/handler.test.ts',
  'test/lambdas/realtime/relay-server.test.ts',
  'test/lambdas/workers/*.test.ts',
  'test/layers/core/admin/integrations/service.test.ts',
  'test/layers/core/admin/invites/public-url.test.ts',
  'test/layers/core/admin/logs/pages.test.ts',
  'test/layers/core/admin/logs/total.test.ts',
  'test/layers/core/admin/policies.test.ts',
  'test/layers/core/admin/prompts.test.ts',
  'test/layers/core/admin/route.test.ts',
  'test/layers/core/gateway/cache/response-cache.test.ts',
  'test/layers/core/gateway/cache/semantic.test.ts',
  'test/layers/core/gateway/guard.test.ts',
  'test/layers/core/gateway/managed.test.ts',
  'test/layers/core/gateway/realtime/guard.test.ts',
  'test/layers/core/gateway/responses-body.test.ts',
  'test/layers/core/app.test.ts',
  'test/layers/core/http/header-alias.test.ts',
  'test/layers/core/observability/analytics.test.ts',
  'test/layers/core/observability/ingest.test.ts',
  'test/layers/core/observability/ingest-items.test.ts',
  'test/layers/core/observability/log-pages.test.ts',
  'test/layers/core/observability/log-spool.test.ts',
  'test/layers/core/observability/logs-api.test.ts',
  'test/layers/core/observability/rollup-writes.test.ts',
  'test/layers/core/observability/rollup-totals.test.ts',
  'test/layers/core/observability/rollup-dimensions.test.ts',
  'test/layers/core/policy/key-auth.test.ts',
  'test/layers/core/policy/limits/alerts.test.ts',
  'test/layers/core/policy/limits/resets.test.ts',
  'test/layers/core/pricing/price-book.test.ts',
  'test/layers/core/prompts/source.test.ts',
  'test/layers/core/providers/providers.test.ts',
  'test/layers/core/store/integrations.test.ts',
  'test/layers/core/store/key-limits.test.ts',
  'test/layers/core/store/limits.test.ts',
  'test/layers/core/store/mcp.test.ts',
  'test/layers/core/store/prefix-range.test.ts',
  'test/layers/core/store/repositories.test.ts',
  'test/layers/core/store/secret-references.test.ts',
  'test/layers/core/store/signed-doc.test.ts',
  'test/layers/core/store/api-key-index.test.ts',
  'test/layers/core/store/batches.test.ts',
  'test/layers/core/batches/engine.test.ts',
  'test/layers/core/admin/api-keys/lifecycle.test.ts',
  'test/layers/core/admin/configs/service.test.ts',
  'test/layers/core/admin/users/service.test.ts',
  'test/layers/core/admin/workspaces/service.test.ts',
];

/** The console in a browser, and its bundle: both need dist/console/. */
const BROWSER = ['test/e2e/console/**/*.test.ts', 'test/infra/console-bundle.test.ts'];
const E2E = ['test/e2e/**/*.test.ts'];

const DYNAMODB = 'test/support/global-setup.ts';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    sequence: { groupOrder: 1 },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...INTEGRATION, ...E2E, ...BROWSER],
          globalSetup: ['test/support/unit-setup.ts'],
          setupFiles: ['test/support/unit-guard.ts'],
          // Pure modules share one module graph per worker: a third of the CPU of isolating each file.
          // So a unit test leaves the process as it found it (env and globals are restored for it).
          isolate: false,
          unstubEnvs: true,
          unstubGlobals: true,
          // Its tests wait on loopback servers as much as on the CPU: two workers even on 2 cores.
          maxWorkers: Math.max(2, availableParallelism() - 1),
          // Its own worker count needs its own group (vitest's rule): it runs first, the other lanes after it.
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'integration', include: INTEGRATION, exclude: [...configDefaults.exclude, ...BROWSER], globalSetup: [DYNAMODB] },
      },
      {
        extends: true,
        test: { name: 'e2e', include: E2E, exclude: [...configDefaults.exclude, ...BROWSER], globalSetup: [DYNAMODB] },
      },
      {
        extends: true,
        test: { name: 'browser', include: BROWSER, globalSetup: [DYNAMODB, 'test/support/console-setup.ts'] },
      },
    ],
  },
});
