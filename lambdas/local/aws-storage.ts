/**
 * The server on AWS (GW_STORAGE=aws): replicas of the local server (the container on Kubernetes or
 * ECS) sharing one deployment's DynamoDB table, SQS queues, S3 bucket and KMS key, through the
 * adapters the Lambda functions use. No DynamoDB Local and no data directory: the replicas keep
 * nothing of their own. Their queue workers consume SQS in every replica; the periodic jobs run in
 * one replica at a time under a lease in the table (docs/container.md).
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { ConfigError, type AppConfig } from '../../layers/core/src/config.ts';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { queueUrlVariable, type QueueConsumer } from '../../layers/core/src/ports/queue.ts';
import { LOGS_QUEUE, EXPORTS_QUEUE } from '../../layers/core/src/observability/messages.ts';
import { ALERTS_QUEUE } from '../../layers/core/src/policy/limits/alerts.ts';
import { MCP_SYNC_QUEUE } from '../../layers/core/src/mcp/messages.ts';
import { exportConsumer, ingestConsumer } from '../../layers/core/src/observability/install.ts';
import { alertsConsumer, runResets } from '../../layers/core/src/policy/limits/workers.ts';
import { runKeyLifecycle } from '../../layers/core/src/admin/api-keys/lifecycle.ts';
import { startSqsPoller } from './sqs-poller.ts';
import { startLeasedJob } from './lease.ts';

/** The queues whose workers the replicas run, each from its `QUEUE_URL_<NAME>`. */
export const WORKER_QUEUES = [LOGS_QUEUE, EXPORTS_QUEUE, ALERTS_QUEUE, MCP_SYNC_QUEUE] as const;

/** How often the replica holding its lease runs the usage resets (the Lambda schedule's rate). */
const USAGE_RESET_EVERY_MS = 60_000;

/**
 * The configuration's environment for GW_STORAGE=aws, or a ConfigError naming every missing or
 * conflicting variable. The table's endpoint, like every other service's, comes from the AWS
 * settings (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL), so a DynamoDB-compatible one can be named.
 */
export function awsStorageEnv(env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  const set = (name: string) => (env[name] ?? '').trim() !== '';
  const required = ['GW_TABLE_NAME', 'BLOB_BUCKET', 'CIPHER_KMS_KEY_ID', ...WORKER_QUEUES.map(queueUrlVariable)];
  const missing = required.filter((name) => !set(name));
  if (!set('AWS_REGION') && !set('AWS_DEFAULT_REGION')) missing.splice(1, 0, 'AWS_REGION');
  if (missing.length > 0) throw new ConfigError(`Invalid configuration: GW_STORAGE=aws needs ${missing.join(', ')}`);
  if (set('DYNAMODB_ENDPOINT')) {
    throw new ConfigError(
      'Invalid configuration: GW_STORAGE=aws reads the table endpoint from AWS_ENDPOINT_URL_DYNAMODB; DYNAMODB_ENDPOINT is for DynamoDB Local',
    );
  }
  const { GW_DATA_DIR: _dataDir, ...rest } = env;
  return {
    ...rest,
    // No data directory: no spool (SQS keeps the messages) and no key file (KMS keeps the key).
    TABLE_NAME: env.GW_TABLE_NAME,
    AWS_REGION: env.AWS_REGION || env.AWS_DEFAULT_REGION,
    LOG_LEVEL: env.LOG_LEVEL ?? 'INFO',
  };
}

/** Fails naming GW_TABLE_NAME when the table cannot be read (absent, another region, no permission). */
export async function checkTable(config: AppConfig): Promise<void> {
  const client = new DynamoDBClient({ region: config.region });
  try {
    await client.send(new DescribeTableCommand({ TableName: config.tableName }));
  } catch (err) {
    const why = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    throw new ConfigError(`GW_TABLE_NAME: the table "${config.tableName}" cannot be used in ${config.region} (${why})`);
  } finally {
    client.destroy();
  }
}

/** `GW_WORKERS=OFF`: this deployment's Lambda workers consume the queues and run the schedules instead. */
export function workersWanted(env: NodeJS.ProcessEnv): boolean {
  const v = (env.GW_WORKERS ?? '').trim().toUpperCase();
  if (!['', 'ON', 'OFF'].includes(v)) throw new ConfigError('Invalid configuration: GW_WORKERS must be ON or OFF');
  return v !== 'OFF';
}

/**
 * Starts this replica's workers: every queue's consumer (all replicas consume, SQS hands each
 * message to one), and the key lifecycle and usage resets under leases. Returns their stop.
 */
export function startAwsWorkers(deps: CoreDeps): () => Promise<void> {
  const client = new SQSClient({ region: deps.config.region });
  const consumers: Record<(typeof WORKER_QUEUES)[number], QueueConsumer<never>> = {
    [LOGS_QUEUE]: ingestConsumer(deps),
    [EXPORTS_QUEUE]: exportConsumer(deps),
    [ALERTS_QUEUE]: alertsConsumer(deps),
    // Imported on the first sync: the MCP SDK stays out of replicas that never sync.
    [MCP_SYNC_QUEUE]: async (batch) => (await import('../../layers/core/src/mcp/sync-queue.ts')).mcpSyncConsumer(deps)(batch),
  };
  const pollers = WORKER_QUEUES.map((name) =>
    startSqsPoller({ client, queueUrl: deps.config.queueUrls[queueUrlVariable(name)]!, consumer: consumers[name], logger: deps.logger }),
  );
  const holder = `${os.hostname()}:${process.pid}:${randomUUID()}`;
  const table = { doc: deps.repos.table.doc, tableName: deps.repos.table.tableName };
  const leased = (job: string, everyMs: number, run: () => Promise<unknown>) => startLeasedJob({ table, job, holder, everyMs, run, logger: deps.logger });
  const jobs = [leased('usage-resets', USAGE_RESET_EVERY_MS, () => runResets(deps))];
  if (deps.config.keyLifecycleIntervalMs > 0) jobs.push(leased('key-lifecycle', deps.config.keyLifecycleIntervalMs, () => runKeyLifecycle(deps)));
  return async () => {
    await Promise.all([...pollers.map((p) => p.stop()), ...jobs.map((stop) => stop())]);
    client.destroy();
  };
}
