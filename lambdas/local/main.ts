/**
 * `npm start`: DynamoDB Local, the table, the first-start organisation and owner key, and the core
 * on http://127.0.0.1:8787. SIGINT (Ctrl-C) or SIGTERM stops it like a service: no new connections,
 * requests in flight finish (up to GW_SHUTDOWN_GRACE_SECONDS), queued request logs are delivered,
 * then DynamoDB Local stops. A second signal stops at once. DynamoDB Local also stops when this
 * process dies any other way (see dynamodb-local.ts).
 *
 * With GW_STORAGE=aws it starts no DynamoDB Local: replicas share a deployment's table, queues,
 * bucket and key instead (aws-storage.ts, docs/container.md).
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConfigError, loadConfig } from '../../layers/core/src/config.ts';
import { createDeps, type CoreDeps } from '../../layers/core/src/deps.ts';
import { localAdapters } from '../../layers/core/src/local-adapters.ts';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { startLocalLimitsWorkers } from '../../layers/core/src/policy/limits/workers.ts';
import { startKeyLifecycleSchedule } from '../../layers/core/src/admin/api-keys/lifecycle.ts';
import { DataDirInUseError, JavaMissingError, startDynamoDBLocal, type DynamoDBLocal } from './dynamodb-local.ts';
import { startLocalServer, type LocalMode, type LocalServer } from './server.ts';
import { attachLocalWorkers } from '../../layers/core/src/local-adapters.ts';
import { LocalBatchDriver } from '../../layers/core/src/batches/local-driver.ts';
import { flushHooks } from '../shared/observability.ts';
import { LOGS_QUEUE, type LogQueueMessage } from '../../layers/core/src/observability/messages.ts';
import { startLogIngestProcess, type LogIngestProcess } from './log-ingest-process.ts';
import { logDurability } from '../../layers/core/src/observability/hooks.ts';
import { startSpoolMetrics } from '../../layers/core/src/observability/spool-metrics.ts';
import { serverAwsAdapters } from '../../layers/core/src/local-adapters.ts';
import { batchRunnerFromEnv } from '../shared/deps.ts';
import { awsStorageEnv, checkTable, startAwsWorkers, workersWanted } from './aws-storage.ts';

async function main(): Promise<void> {
  const env = process.env;
  const mode = (env.GW_LOCAL_MODE ?? 'direct') as LocalMode;
  if (mode !== 'direct' && mode !== 'lambda') throw new ConfigError('GW_LOCAL_MODE must be "direct" or "lambda"');
  const port = Number(env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError('PORT must be a port number');
  const host = env.HOST ?? '127.0.0.1';
  const dataDir = env.GW_DATA_DIR ?? '.data';
  const graceMs = wholeSeconds('GW_SHUTDOWN_GRACE_SECONDS', env.GW_SHUTDOWN_GRACE_SECONDS, 10) * 1000;
  const running: Running = { stopSchedules: [] };
  onStopSignal(running, graceMs);
  if (env.GW_STORAGE?.trim().toLowerCase() === 'aws') return startOnAws(env, { mode, port, host }, running);

  const ddb = await startDynamoDBLocal({ dataDir });
  running.ddb = ddb;
  const stop = async (code: number) => {
    await ddb.stop();
    process.exit(code);
  };
  try {
    const configEnv = {
      ...env,
      TABLE_NAME: env.TABLE_NAME ?? 'gantry',
      DYNAMODB_ENDPOINT: ddb.endpoint,
      AWS_REGION: env.AWS_REGION ?? 'local',
      LOG_LEVEL: env.LOG_LEVEL ?? 'INFO',
      GW_DATA_DIR: dataDir,
      GW_BLOB_DIR: env.GW_BLOB_DIR ?? (dataDir === ':memory:' ? mkdtempSync(path.join(os.tmpdir(), 'gantry-blobs-')) : path.join(dataDir, 'blobs')),
      GW_OUTBOX_DIR: env.GW_OUTBOX_DIR ?? (dataDir === ':memory:' ? mkdtempSync(path.join(os.tmpdir(), 'gantry-outbox-')) : path.join(dataDir, 'outbox')),
    };
    const config = loadConfig(configEnv);
    const client = new DynamoDBClient({
      endpoint: ddb.endpoint,
      region: config.region,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    await ensureTable(client, config.tableName);
    client.destroy();

    const deps = createDeps(config, localAdapters(config));
    running.deps = deps;
    // Request logs are written by a process of its own, as by a function of its own in AWS (fed by
    // SQS there, by the spooled in-process queue here); log exports are processed in this process.
    const ingest = startLogIngestProcess({ env: configEnv, requeue: deps.queues.get<LogQueueMessage>(LOGS_QUEUE), logger: deps.logger });
    running.ingest = ingest;
    attachLocalWorkers(deps, { ingest: ingest.consumer });
    const boot = await ensureBootstrap(deps, env.GW_BOOTSTRAP_ADMIN_KEY || undefined);
    const server = await startLocalServer({ deps, mode, port, host, ...(env.GW_CONSOLE_DIR ? { consoleDir: env.GW_CONSOLE_DIR } : {}) });
    running.server = server;
    // Batches a previous run left unfinished go on (their per-line records say which lines remain).
    if (deps.batchRunner instanceof LocalBatchDriver) {
      const resumed = await deps.batchRunner.resume();
      if (resumed.length > 0) console.log(`Resuming ${resumed.length} unfinished batch(es)`);
    }
    // Usage limit alerts (in-process queue -> outbox) and periodic usage resets.
    running.stopSchedules.push(startLocalLimitsWorkers(deps));
    // Key expiry, rotation policies, key usage resets and key e-mails (EventBridge Scheduler in AWS).
    if (deps.config.keyLifecycleIntervalMs > 0) running.stopSchedules.push(startKeyLifecycleSchedule(deps, deps.config.keyLifecycleIntervalMs));
    // The spools' size as metrics (also in /v1/health), as CloudWatch watches the SQS queues in AWS.
    const spools = deps.queues.spools?.bind(deps.queues);
    if (deps.config.emfMetrics && spools) {
      const kept = logDurability(deps.gatewayHooks);
      running.stopSchedules.push(
        startSpoolMetrics({
          serviceName: env.POWERTOOLS_SERVICE_NAME ?? 'gantry',
          intervalMs: 60_000,
          spools,
          ...(kept ? { durability: kept.durabilityStats } : {}),
        }),
      );
    }

    console.log(`Gantry is listening on ${server.url} (${mode} mode; data: ${dataDir}; DynamoDB Local on port ${ddb.port})`);
    console.log(`  admin console: ${server.url}/console/ (sign in with an admin or workspace API key)`);
    console.log(`  organisation ${boot.organisationId}, workspace "default" ${boot.workspaceId}`);
    if (boot.createdAdminKey) {
      console.log('  Organisation owner admin key (shown once, keep it safe):');
      console.log(`    ${boot.createdAdminKey}`);
    }
    running.ready = true;
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    await stop(1);
  }
}

/** GW_STORAGE=aws: the server on the deployment's table, queues, bucket and key; no DynamoDB Local. */
async function startOnAws(env: NodeJS.ProcessEnv, listen: { mode: LocalMode; port: number; host: string }, running: Running): Promise<void> {
  const config = loadConfig(awsStorageEnv(env));
  const workers = workersWanted(env);
  await checkTable(config);
  const deps = createDeps(config, { ...serverAwsAdapters(config), ...batchRunnerFromEnv(env) });
  running.deps = deps;
  const boot = await ensureBootstrap(deps, env.GW_BOOTSTRAP_ADMIN_KEY || undefined);
  const server = await startLocalServer({ deps, ...listen, ...(env.GW_CONSOLE_DIR ? { consoleDir: env.GW_CONSOLE_DIR } : {}) });
  running.server = server;
  if (workers) running.stopWorkers = startAwsWorkers(deps);
  console.log(`Gantry is listening on ${server.url} (${listen.mode} mode; storage: aws, table ${config.tableName} in ${config.region})`);
  console.log(`  workers: ${workers ? 'queue consumers and leased schedules run in this replica' : 'off (GW_WORKERS=OFF: the Lambda workers run them)'}`);
  console.log(`  organisation ${boot.organisationId}, workspace "default" ${boot.workspaceId}`);
  if (boot.createdAdminKey) {
    console.log('  Organisation owner admin key (shown once, keep it safe):');
    console.log(`    ${boot.createdAdminKey}`);
  }
  running.ready = true;
}

interface Running {
  /** Set once everything has started; a signal before that stops at once. */
  ready?: boolean;
  ddb?: DynamoDBLocal;
  deps?: CoreDeps;
  ingest?: LogIngestProcess;
  server?: LocalServer;
  stopSchedules: (() => void)[];
  /** GW_STORAGE=aws: stops this replica's queue consumers (after their batch) and gives its leases back. */
  stopWorkers?: () => Promise<void>;
}

/** The first SIGINT or SIGTERM stops gracefully; a second one (or one during start-up) at once. */
function onStopSignal(running: Running, graceMs: number): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping || !running.ready) {
      // The exit handler of dynamodb-local.ts stops DynamoDB Local.
      process.exit(signal === 'SIGINT' ? 130 : 143);
    }
    stopping = true;
    console.log(`${signal}: stopping Gantry (requests in flight get up to ${graceMs / 1000} s)...`);
    shutdown(running, graceMs).then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

async function shutdown(running: Running, graceMs: number): Promise<void> {
  for (const stop of running.stopSchedules) stop();
  await running.server?.close(graceMs);
  // Batch lines in flight finish and are recorded; the next start resumes the rest.
  if (running.deps?.batchRunner instanceof LocalBatchDriver) await within(running.deps.batchRunner.stop(), graceMs);
  // The last requests' settlements and logs, then everything queued, while the table is still up.
  const deps = running.deps;
  const flushed = deps && flushHooks(deps).then(() => deps.queues.close?.());
  if (flushed && !(await within(flushed, graceMs))) console.error(`Queued messages were not delivered within ${graceMs / 1000} s; they are dropped.`);
  if (running.stopWorkers && !(await within(running.stopWorkers(), graceMs)))
    console.error('Queue workers did not stop in time; SQS delivers their batch again.');
  await running.ingest?.close();
  await running.ddb?.stop();
}

/** Whether `p` settled within `ms` (a rejection counts as settled: the queue reported its own failure). */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const done = p.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([done, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function wholeSeconds(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 3600) throw new ConfigError(`${name} must be a whole number of seconds from 0 to 3600`);
  return n;
}

main().catch((err: unknown) => {
  if (err instanceof JavaMissingError || err instanceof ConfigError || err instanceof DataDirInUseError) console.error(err.message);
  else console.error(err);
  process.exit(1);
});
