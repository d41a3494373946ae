/**
 * `npm start`: DynamoDB Local, the table, the first-start organisation and owner key, and the core
 * on http://127.0.0.1:8787. Ctrl-C stops everything, DynamoDB Local included.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConfigError, loadConfig } from '../../layers/core/src/config.ts';
import { createDeps } from '../../layers/core/src/deps.ts';
import { localAdapters } from '../../layers/core/src/ports/local/adapters.ts';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { startLocalLimitsWorkers } from '../../layers/core/src/policy/limits/workers.ts';
import { startKeyLifecycleSchedule } from '../../layers/core/src/admin/api-keys/lifecycle.ts';
import { JavaMissingError, startDynamoDBLocal } from './dynamodb-local.ts';
import { startLocalServer, type LocalMode } from './server.ts';
import { attachLocalWorkers } from '../../layers/core/src/observability/install.ts';

async function main(): Promise<void> {
  const env = process.env;
  const mode = (env.GW_LOCAL_MODE ?? 'direct') as LocalMode;
  if (mode !== 'direct' && mode !== 'lambda') throw new ConfigError('GW_LOCAL_MODE must be "direct" or "lambda"');
  const port = Number(env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError('PORT must be a port number');
  const host = env.HOST ?? '127.0.0.1';
  const dataDir = env.GW_DATA_DIR ?? '.data';

  const ddb = await startDynamoDBLocal({ dataDir });
  const stop = async (code: number) => {
    await ddb.stop();
    process.exit(code);
  };
  try {
    const config = loadConfig({
      ...env,
      TABLE_NAME: env.TABLE_NAME ?? 'gantry',
      DYNAMODB_ENDPOINT: ddb.endpoint,
      AWS_REGION: env.AWS_REGION ?? 'local',
      LOG_LEVEL: env.LOG_LEVEL ?? 'INFO',
      GW_DATA_DIR: dataDir,
      GW_BLOB_DIR: env.GW_BLOB_DIR ?? (dataDir === ':memory:' ? mkdtempSync(path.join(os.tmpdir(), 'gantry-blobs-')) : path.join(dataDir, 'blobs')),
      GW_OUTBOX_DIR: env.GW_OUTBOX_DIR ?? (dataDir === ':memory:' ? mkdtempSync(path.join(os.tmpdir(), 'gantry-outbox-')) : path.join(dataDir, 'outbox')),
    });
    const client = new DynamoDBClient({
      endpoint: ddb.endpoint,
      region: config.region,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    await ensureTable(client, config.tableName);
    client.destroy();

    const deps = createDeps(config, localAdapters(config));
    // Request logs and log exports are processed in this process (SQS and worker functions in AWS).
    attachLocalWorkers(deps);
    const boot = await ensureBootstrap(deps, env.GW_BOOTSTRAP_ADMIN_KEY || undefined);
    const server = await startLocalServer({ deps, mode, port, host });
    // Usage limit alerts (in-process queue -> outbox) and periodic usage resets.
    const stopLimitsWorkers = startLocalLimitsWorkers(deps);
    // Key expiry, rotation policies, key usage resets and key e-mails (EventBridge Scheduler in AWS).
    const stopKeyLifecycle = deps.config.keyLifecycleIntervalMs > 0 ? startKeyLifecycleSchedule(deps, deps.config.keyLifecycleIntervalMs) : () => undefined;

    console.log(`Gantry is listening on ${server.url} (${mode} mode; data: ${dataDir}; DynamoDB Local on port ${ddb.port})`);
    console.log(`  organisation ${boot.organisationId}, workspace "default" ${boot.workspaceId}`);
    if (boot.createdAdminKey) {
      console.log('  Organisation owner admin key (shown once, keep it safe):');
      console.log(`    ${boot.createdAdminKey}`);
    }
    const shutdown = () => {
      console.log('Stopping Gantry and DynamoDB Local...');
      stopLimitsWorkers();
      stopKeyLifecycle();
      void server.close().finally(() => stop(0));
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    await stop(1);
  }
}

main().catch((err: unknown) => {
  if (err instanceof JavaMissingError || err instanceof ConfigError) console.error(err.message);
  else console.error(err);
  process.exit(1);
});
