/**
 * Gantry for the bench, run as a child process so its event loop and its resident memory are its
 * own: DynamoDB Local in memory, a fresh table, the first-start bootstrap, the local server in
 * direct mode, and a workspace key. Reports `ready` (url and key) and answers `rss` over IPC.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { loadConfig } from '../../layers/core/src/config.ts';
import { createDeps } from '../../layers/core/src/deps.ts';
import { localAdapters } from '../../layers/core/src/local-adapters.ts';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { startDynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { startLocalServer } from '../../lambdas/local/server.ts';
import { countDynamoCalls } from './ddb-counter.ts';
import { startLogIngestProcess } from '../../lambdas/local/log-ingest-process.ts';
import {
  rssReport,
  type DynamoCallsMessage,
  type IngestCountsMessage,
  type IngestMessage,
  type LimitsMessage,
  type PidsMessage,
  type ReadyMessage,
} from './protocol.ts';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { McpRepository } from '../../layers/core/src/store/mcp.ts';
import type { LocalQueueFactory } from '../../layers/core/src/ports/queue-factory.ts';
import { LOGS_QUEUE, type LogQueueMessage } from '../../layers/core/src/observability/messages.ts';
import { attachLocalWorkers } from '../../layers/core/src/local-adapters.ts';

const ddb = await startDynamoDBLocal({ dataDir: ':memory:' });
let stopping = false;
let closeServer: () => Promise<void> = () => Promise.resolve();

async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    // Never hang on the way out; exiting also SIGKILLs DynamoDB Local (its 'exit' hook).
    setTimeout(() => process.exit(code), 5_000).unref();
    await closeServer().catch(() => undefined);
    await ddb.stop().catch(() => undefined);
  }
  process.exit(code);
}
process.on('disconnect', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
process.on('SIGINT', () => void stop(0));

try {
  const env = {
    TABLE_NAME: 'gantry-bench',
    DYNAMODB_ENDPOINT: ddb.endpoint,
    AWS_REGION: 'local',
    GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1',
    // The bench runs one Gantry with request logs and one without (GW_REQUEST_LOGS=OFF).
    GW_REQUEST_LOGS: process.env.GW_REQUEST_LOGS,
    // The local server's default unless the bench is told otherwise (to measure what the bound costs).
    GW_QUEUE_MAX_IN_MEMORY: process.env.GW_QUEUE_MAX_IN_MEMORY,
    // As `npm start` runs: the logs queue spools to the data directory past GW_QUEUE_MAX_IN_MEMORY.
    GW_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'gantry-bench-data-')),
  };
  const config = loadConfig(env);
  const client = new DynamoDBClient({
    endpoint: ddb.endpoint,
    region: config.region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  await ensureTable(client, config.tableName);
  client.destroy();

  const deps = createDeps(config, localAdapters(config));
  const dynamoCounts = countDynamoCalls(deps.repos.table.doc);
  // As `npm start`: the log-ingest worker in a process of its own (a function of its own in AWS).
  const logsQueue = (deps.queues as LocalQueueFactory).get<LogQueueMessage>(LOGS_QUEUE);
  // The worker with its DynamoDB requests counted (log-ingest-counting-child.ts), from the sources beside this file.
  const countsFile = path.join(env.GW_DATA_DIR, 'ingest-counts.json');
  const ingest = startLogIngestProcess({
    env: { ...env, BENCH_INGEST_COUNTS: countsFile },
    requeue: logsQueue,
    logger: deps.logger,
    script: new URL('../../test/bench/log-ingest-counting-child.ts', import.meta.url),
  });
  // The bench has the log-ingest worker drop events while it measures the request path alone.
  let discard = false;
  attachLocalWorkers(deps, { ingest: async (batch) => (discard ? [] : ingest.consumer(batch)) });
  const boot = await ensureBootstrap(deps);
  if (!boot.createdAdminKey) throw new Error('bootstrap did not create an owner key on a fresh table');
  const server = await startLocalServer({ deps, mode: 'direct' });
  closeServer = async () => {
    await server.close();
    deps.upstream.close();
  };

  const res = await fetch(`${server.url}/v1/api-keys/workspace/service`, {
    method: 'POST',
    headers: { 'x-gw-api-key': boot.createdAdminKey, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', workspace_id: 'default', scopes: ['completions.write'] }),
  });
  const body = (await res.json()) as { key?: unknown };
  if (res.status !== 200 || typeof body.key !== 'string') throw new Error(`workspace key: ${res.status} ${JSON.stringify(body)}`);
  const limitedApiKey = await limitedKey(server.url, boot.createdAdminKey);
  const approximateApiKey = await limitedKey(server.url, boot.createdAdminKey, { mode: 'approximate', lease_size: 100 });
  // Counts the limit counter calls, so the bench can report them per request.
  const counts = { reserves: 0, adjusts: 0 };
  const repo = deps.limits.repo;
  const reserve = repo.reserve.bind(repo);
  const adjust = repo.adjust.bind(repo);
  repo.reserve = (...args) => (counts.reserves++, reserve(...args));
  repo.adjust = (...args) => (counts.adjusts++, adjust(...args));

  process.on('message', (m: unknown) => {
    if (typeof m === 'object' && m !== null && 'type' in m && m.type === 'rss') {
      process.send?.(rssReport());
    }
    if (typeof m === 'object' && m !== null && 'type' in m && m.type === 'ingest') {
      discard = 'action' in m && m.action === 'discard';
      if (discard) {
        const stats = ingest.stats();
        const reply: IngestMessage = { type: 'ingest', written: 0, ms: 0, total: stats.logsWritten, busyMs: Math.round(stats.busyMs), drained: true };
        process.send?.(reply);
      } else void drainLogs(deps, ingest.stats).then((reply) => process.send?.(reply));
    }
    if (typeof m === 'object' && m !== null && 'type' in m && m.type === 'dynamodb') {
      const reply: DynamoCallsMessage = { type: 'dynamodb', ...dynamoCounts() };
      process.send?.(reply);
    }
    if (typeof m === 'object' && m !== null && 'type' in m && m.type === 'pids') {
      const reply: PidsMessage = { type: 'pids', gantry: process.pid, dynamodb: ddb.pid || undefined, ingest: ingest.pid() };
      process.send?.(reply);
    }
    if (typeof m === 'object' && m !== null && 'type' in m && m.type === 'ingest_counts') {
      void ingestCounts(ingest.pid(), ingest.stats().busyMs > 0, countsFile).then((reply) => process.send?.(reply));
    }
    if (typeof m === 'object' && m !== null && 'type' in m && m.type === 'limits') {
      const reply: LimitsMessage = { type: 'limits', ...counts };
      process.send?.(reply);
    }
  });
  const mcpSlug = process.env.BENCH_MCP_URL ? await registerMcpServer(deps, boot.organisationId, boot.workspaceId, process.env.BENCH_MCP_URL) : undefined;
  const ready: ReadyMessage = { type: 'ready', url: server.url, apiKey: body.key, limitedApiKey, approximateApiKey, ...(mcpSlug ? { mcpSlug } : {}) };
  process.send?.(ready);
} catch (err) {
  console.error(err);
  await stop(1);
}

/** An MCP integration (no credentials, its tools enabled) and a server in the default workspace (`npm run bench:mcp`). */
async function registerMcpServer(deps: CoreDeps, org: string, workspaceId: string, url: string): Promise<string> {
  const repo = new McpRepository(deps.repos.table);
  const at = new Date().toISOString();
  const audit = { created_at: at, last_updated_at: at, created_by: null, last_updated_by: null };
  await repo.createIntegration({
    id: 'bench-int',
    organisation_id: org,
    workspace_id: null,
    slug: 'bench-int',
    name: 'bench',
    description: null,
    url,
    auth_type: 'none',
    transport: 'http',
    configurations: {},
    masked_configurations: {},
    secret: null,
    global_workspace_access: true,
    workspace_ids: [],
    new_capabilities_enabled: true,
    status: 'active',
    ...audit,
  });
  await repo.putCapabilities(
    org,
    'bench-int',
    ['echo', 'add'].map((name) => ({ type: 'tool' as const, name, enabled: true, created_at: at, last_updated_at: at })),
    at,
  );
  await repo.createServer({
    id: 'bench-srv',
    organisation_id: org,
    workspace_id: workspaceId,
    slug: 'bench-mcp',
    name: 'bench',
    description: null,
    mcp_integration_id: 'bench-int',
    capability_overrides: {},
    default_user_access: 'allow',
    user_access: {},
    status: 'active',
    ...audit,
  });
  return 'bench-mcp';
}

/** Another workspace key and one rate limits policy that matches it (and never refuses); `mode` names its mode. */
async function limitedKey(url: string, adminKey: string, mode: Record<string, unknown> = {}): Promise<string> {
  const post = async (path: string, payload: unknown) => {
    const r = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'x-gw-api-key': adminKey, 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    });
    const json = (await r.json()) as Record<string, unknown>;
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(json)}`);
    return json;
  };
  const key = await post('/v1/api-keys/workspace/service', { name: 'bench limited', workspace_id: 'default', scopes: ['completions.write'] });
  await post('/v1/policies/rate-limits', {
    name: 'bench',
    conditions: [{ key: 'api_key', value: key.id }],
    group_by: [{ key: 'api_key' }],
    type: 'requests',
    unit: 'rpm',
    value: 1_000_000_000,
    workspace_id: 'default',
    ...mode,
  });
  return key.key as string;
}

/**
 * The worker's DynamoDB requests so far: it writes them to `file` on SIGUSR2 (only once it has
 * answered a batch, so its handler is installed), which is read as soon as it is there.
 */
async function ingestCounts(pid: number | undefined, started: boolean, file: string): Promise<IngestCountsMessage> {
  if (!pid || !started) return { type: 'ingest_counts', counts: null };
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 2_000;
  while (Date.now() < deadline) {
    if (existsSync(file)) {
      try {
        return { type: 'ingest_counts', counts: JSON.parse(readFileSync(file, 'utf8')) as IngestCountsMessage['counts'] };
      } catch {
        // Read while it was being written: again.
      }
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  return { type: 'ingest_counts', counts: null };
}

/** Lets the log-ingest worker write its backlog (for at most 60 s) and says how fast it went. */
async function drainLogs(deps: CoreDeps, stats: () => { logsWritten: number; busyMs: number }): Promise<IngestMessage> {
  await Promise.all(deps.gatewayHooks.map((h) => h.flush?.()));
  const before = stats().logsWritten;
  const started = performance.now();
  const logs = (deps.queues as LocalQueueFactory).get(LOGS_QUEUE);
  const drained = await Promise.race([logs.drain().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 60_000).unref())]);
  const after = stats();
  return {
    type: 'ingest',
    written: after.logsWritten - before,
    ms: Math.round(performance.now() - started),
    total: after.logsWritten,
    busyMs: Math.round(after.busyMs),
    drained,
  };
}
