/**
 * `npm run seed:large [-- --keys N --logs N --data-dir DIR --samples N]`: seeds DynamoDB Local with
 * API keys and request logs (default 1,000,000 and 10,000,000; BatchWriteItem, several in flight,
 * progress on stderr), then times every admin list the console uses through the local server and
 * prints p50/p95 per list as JSON on stdout. Not part of `npm test`. In memory by default; with
 * `--data-dir DIR` the data stays on disk, so a later run with `--keys 0 --logs 0` times it again.
 */
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startDynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { startLocalServer } from '../../lambdas/local/server.ts';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { loadConfig } from '../../layers/core/src/config.ts';
import { createDeps, type CoreDeps } from '../../layers/core/src/deps.ts';
import { observability } from '../../layers/core/src/observability/install.ts';
import { localAdapters } from '../../layers/core/src/ports/local/adapters.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { ApiKey, ApiKeyByHash } from '../../layers/core/src/store/entities.ts';
import { newKeyRecord } from '../../layers/core/src/admin/api-keys/service.ts';
import { syntheticEvents } from '../support/observability.ts';

const ADMIN_KEY = 'gw_seed-large-owner-key-000000000000000000';
const BATCH = 25;
const LIST_BUDGET_P95_MS = 300;

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    logs: { type: 'string', default: '10000000' },
    // In memory by default: DynamoDB Local on disk (SQLite) wrote about 25 items/s on this machine.
    'data-dir': { type: 'string', default: ':memory:' },
    'heap-mb': { type: 'string', default: '8192' },
    samples: { type: 'string', default: '40' },
    concurrency: { type: 'string', default: '6' },
  },
});
const count = (name: string, raw: string | undefined): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number`);
  return n;
};
const KEYS = count('keys', args.keys);
const LOGS = count('logs', args.logs);
const SAMPLES = Math.max(5, count('samples', args.samples));
const CONCURRENCY = Math.max(1, count('concurrency', args.concurrency));

const progress = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);

/** Writes items in batches of 25 with `CONCURRENCY` batches in flight, retrying what DynamoDB left unprocessed. */
async function writeAll(doc: DynamoDBDocumentClient, table: string, what: string, total: number, items: (from: number, to: number) => Record<string, unknown>[], perRecord: number): Promise<number> {
  const started = Date.now();
  let next = 0;
  let done = 0;
  let lastReport = 0;
  const chunk = Math.max(1, Math.floor(BATCH / perRecord));
  const worker = async () => {
    while (next < total) {
      const from = next;
      const to = Math.min(total, from + chunk);
      next = to;
      let pending = items(from, to).map((Item) => ({ PutRequest: { Item } }));
      for (let attempt = 0; pending.length; attempt++) {
        const out = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
        pending = (out.UnprocessedItems?.[table] ?? []) as typeof pending;
        if (pending.length) await new Promise((r) => setTimeout(r, Math.min(1000, 20 * 2 ** attempt)));
      }
      done += to - from;
      if (Date.now() - lastReport > 10_000) {
        lastReport = Date.now();
        const rate = done / ((Date.now() - started) / 1000);
        progress(`${what}: ${done.toLocaleString('en')} / ${total.toLocaleString('en')} (${Math.round(rate)}/s, ~${Math.round((total - done) / rate)} s left)`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (Date.now() - started) / 1000;
  progress(`${what}: ${total.toLocaleString('en')} in ${seconds.toFixed(0)} s`);
  return seconds;
}

/** Synthetic keys of the default workspace, one second apart (their keys are thrown away). */
function keyItems(orgId: string, wsId: string) {
  const base = Date.UTC(2026, 0, 1);
  return (from: number, to: number) => {
    const out: Record<string, unknown>[] = [];
    for (let i = from; i < to; i++) {
      const fields = { organisation_id: orgId, workspace_id: wsId, user_id: null, type: 'workspace-service' as const, name: `seeded key ${i}`, description: null, scopes: ['completions.write'], expires_at: null, owner: false, created_by: null };
      const { record } = newKeyRecord(fields, base + i * 1000);
      out.push(ApiKey.toItem(record), ApiKeyByHash.toItem(record));
    }
    return out;
  };
}

/** Request logs of the default workspace over the last 36 hours, each with its id pointer. */
function logItems(deps: CoreDeps, orgId: string, wsId: string) {
  const store = observability(deps).logs;
  const now = deps.clock.now();
  const per = 1000;
  return (from: number, to: number) => {
    const out: Record<string, unknown>[] = [];
    for (let block = Math.floor(from / per); block * per < to; block++) {
      const events = syntheticEvents(per, { start: now - 36 * 3_600_000, spanMs: 36 * 3_600_000 - 60_000, workspaceId: wsId, organisationId: orgId, seed: block + 1 });
      for (let i = Math.max(from, block * per); i < Math.min(to, (block + 1) * per); i++) {
        const e = events[i - block * per];
        if (!e) continue;
        out.push(store.itemOf(e), store.pointerOf(e));
      }
    }
    return out;
  };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** Times one list: warm-up, then `SAMPLES` sequential requests; every answer must be 200. */
async function time(url: string, path: string): Promise<{ p50_ms: number; p95_ms: number; items: number; total: unknown }> {
  const once = async () => {
    const t = performance.now();
    const res = await fetch(url + path, { headers: { 'x-gw-api-key': ADMIN_KEY } });
    const body = (await res.json()) as { data?: unknown[]; total?: unknown };
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    return { ms: performance.now() - t, items: body.data?.length ?? 0, total: body.total };
  };
  for (let i = 0; i < 3; i++) await once();
  const runs = [];
  for (let i = 0; i < SAMPLES; i++) runs.push(await once());
  const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 10) / 10;
  return { p50_ms: round(percentile(ms, 50)), p95_ms: round(percentile(ms, 95)), items: runs[0]?.items ?? 0, total: runs[0]?.total };
}

/** The lists the console's pages load. */
async function listPaths(url: string, wsId: string): Promise<Record<string, string>> {
  const first = (await (await fetch(`${url}/v1/logs?page_size=50`, { headers: { 'x-gw-api-key': ADMIN_KEY } })).json()) as { next_cursor?: string | null };
  const keys = (await (await fetch(`${url}/v1/api-keys?page_size=50&cursor=`, { headers: { 'x-gw-api-key': ADMIN_KEY } })).json()) as { next_cursor?: string | null };
  const day = new Date(Date.now() - 86_400_000).toISOString();
  return {
    'api-keys (cursor, first page)': '/v1/api-keys?page_size=50&cursor=',
    ...(keys.next_cursor ? { 'api-keys (cursor, next page)': `/v1/api-keys?page_size=50&cursor=${keys.next_cursor}` } : {}),
    'api-keys of a workspace (cursor)': `/v1/api-keys?workspace_id=${wsId}&page_size=50&cursor=`,
    logs: '/v1/logs?page_size=50',
    ...(first.next_cursor ? { 'logs (next page)': `/v1/logs?page_size=50&cursor=${first.next_cursor}` } : {}),
    'logs filtered by model': '/v1/logs?page_size=50&model=gpt-4o-mini',
    'logs filtered by status': '/v1/logs?page_size=50&status_code=500',
    'logs filtered by time range': `/v1/logs?page_size=50&start_time=${day}`,
    'audit logs': '/v1/audit-logs?page_size=50',
    users: '/v1/admin/users?page_size=50',
    workspaces: '/v1/admin/workspaces?page_size=50',
    configs: '/v1/configs?page_size=50',
    'prompts': '/v1/prompts?page_size=50',
    'guardrails': '/v1/guardrails?page_size=50',
    'integrations': '/v1/integrations?page_size=50',
    'virtual keys': '/v1/virtual-keys?page_size=50',
  };
}

async function main(): Promise<void> {
  const ddb = await startDynamoDBLocal({ dataDir: args['data-dir'] ?? ':memory:', heapMb: count('heap-mb', args['heap-mb']) });
  try {
    const config = loadConfig({ TABLE_NAME: 'gantry', DYNAMODB_ENDPOINT: ddb.endpoint, AWS_REGION: 'local', LOG_LEVEL: 'ERROR', GW_KEY_LIFECYCLE_INTERVAL_SECONDS: '0', GW_DYNAMODB_REQUEST_TIMEOUT_MS: '120000' });
    const client = new DynamoDBClient({ endpoint: ddb.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await ensureTable(client, config.tableName);
    client.destroy();
    const deps = createDeps(config, localAdapters(config));
    const boot = await ensureBootstrap(deps, ADMIN_KEY);
    const seconds: Record<string, number> = {};
    if (KEYS) seconds.keys = await writeAll(deps.repos.table.doc, config.tableName, 'api keys', KEYS, keyItems(boot.organisationId, boot.workspaceId), 2);
    if (LOGS) seconds.logs = await writeAll(deps.repos.table.doc, config.tableName, 'request logs', LOGS, logItems(deps, boot.organisationId, boot.workspaceId), 2);
    const server = await startLocalServer({ deps });
    const lists: Record<string, unknown> = {};
    try {
      for (const [name, path] of Object.entries(await listPaths(server.url, boot.workspaceId))) {
        lists[name] = { path, ...(await time(server.url, path)) };
        progress(`${name}: ${JSON.stringify(lists[name])}`);
      }
    } finally {
      await server.close();
      deps.upstream.close();
    }
    const over = Object.entries(lists).filter(([, r]) => (r as { p95_ms: number }).p95_ms > LIST_BUDGET_P95_MS).map(([n]) => n);
    const seeded = { api_keys: KEYS, request_logs: LOGS, write_seconds: seconds };
    console.log(JSON.stringify({ seeded, data_dir: args['data-dir'], samples: SAMPLES, budget_p95_ms: LIST_BUDGET_P95_MS, over_budget: over, lists }, null, 2));
  } finally {
    await ddb.stop();
  }
}

await main();
