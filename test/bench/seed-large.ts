/**
 * `npm run seed:large [-- --keys N --logs N --hours H --data-dir DIR --samples N]`: seeds DynamoDB
 * Local with API keys and request logs (default 1,000,000 and 10,000,000 over the last 36 hours; a
 * smaller `--logs` with a shorter `--hours` keeps the logs, keys and rollup combinations of an hour
 * as the full seed has them), then times every admin list the
 * console uses through the local server and prints p50/p95 per list as JSON on stdout. Not part of
 * `npm test`. The items are written straight into DynamoDB Local's store while it is stopped
 * (ddb-local-store.ts: tens of thousands of items a second, where its API takes about a thousand);
 * every read is DynamoDB Local's. Without `--data-dir` the data goes to a temporary directory that is
 * removed at the end; with it the data stays, so a later run with `--keys 0 --logs 0` times it again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startDynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { startLocalServer } from '../../lambdas/local/server.ts';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { loadConfig, type AppConfig } from '../../layers/core/src/config.ts';
import { createDeps, type CoreDeps } from '../../layers/core/src/deps.ts';
import { observability } from '../../layers/core/src/observability/install.ts';
import { localAdapters } from '../../layers/core/src/local-adapters.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { ApiKey, ApiKeyByHash } from '../../layers/core/src/store/entities.ts';
import { newKeyRecord } from '../../layers/core/src/admin/api-keys/service.ts';
import { mergeInto } from '../../layers/core/src/observability/aggregate.ts';
import { admitBusiest } from '../../layers/core/src/observability/rollup-admission.ts';
import { rollupsOf, type PendingRollup, type RollupStore } from '../../layers/core/src/observability/rollups.ts';
import { bucketKey, DAY_MS, GRANULARITY_MS } from '../../layers/core/src/observability/time.ts';
import { admissionKey, markerKey } from '../../layers/core/src/store/rollup-items.ts';
import { syntheticEvents } from '../support/observability.ts';
import { BulkTable } from './ddb-local-store.ts';

const ADMIN_KEY = 'gw_seed-large-owner-key-000000000000000000';
/** The first seeded key's secret (the others are thrown away): it proves the key-by-hash items authenticate. */
const SEEDED_KEY = 'gw_seed-large-seeded-key-0000000000000000';
/** Items per SQLite transaction. */
const BATCH = 20_000;
const LIST_BUDGET_P95_MS = 300;

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    logs: { type: 'string', default: '10000000' },
    'data-dir': { type: 'string' },
    'heap-mb': { type: 'string', default: '2048' },
    samples: { type: 'string', default: '40' },
    hours: { type: 'string', default: '36' },
    // `off`: no totals marker, so charts read the combination rollups (how a table upgraded in place reads its older buckets).
    totals: { type: 'string', default: 'on' },
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
if (args.totals !== 'on' && args.totals !== 'off') throw new Error('--totals must be on or off');
const TOTALS = args.totals === 'on';

const progress = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);

/** Writes `total` records' items in transactions of about `BATCH` items, reporting progress. */
function writeAll(table: BulkTable, what: string, total: number, items: (from: number, to: number) => Record<string, unknown>[], perRecord: number): number {
  const started = Date.now();
  let lastReport = started;
  const chunk = Math.max(1, Math.floor(BATCH / perRecord));
  for (let from = 0; from < total; from += chunk) {
    const to = Math.min(total, from + chunk);
    table.write(items(from, to));
    if (Date.now() - lastReport > 10_000) {
      lastReport = Date.now();
      const rate = to / ((Date.now() - started) / 1000);
      progress(`${what}: ${to.toLocaleString('en')} / ${total.toLocaleString('en')} (${Math.round(rate)}/s, ~${Math.round((total - to) / rate)} s left)`);
    }
  }
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
      const fields = {
        organisation_id: orgId,
        workspace_id: wsId,
        user_id: null,
        type: 'workspace-service' as const,
        name: `seeded key ${i}`,
        description: null,
        scopes: ['completions.write'],
        expires_at: null,
        owner: false,
        created_by: null,
      };
      const { record } = i === 0 ? newKeyRecord(fields, base, SEEDED_KEY) : newKeyRecord(fields, base + i * 1000);
      out.push(ApiKey.toItem(record), ApiKeyByHash.toItem(record));
    }
    return out;
  };
}

const HOURS = Number(args.hours);
if (!(HOURS > 0 && HOURS <= 24 * 30)) throw new Error('--hours must be a number of hours, above 0 and at most 720');
const LOG_SPAN_MS = Math.round(HOURS * 3_600_000);

/**
 * Request logs of the default workspace over the last `--hours` hours, each with its id pointer, and the
 * analytics rollups the ingest would have built from them (the logs page's total and the overview
 * read those). Blocks of logs come in time order, so a rollup is written once its bucket is complete.
 */
function logItems(deps: CoreDeps, orgId: string, wsId: string, total: number) {
  const { logs: store, rollups } = observability(deps);
  const start = deps.clock.now() - LOG_SPAN_MS;
  const per = 1000;
  const slice = LOG_SPAN_MS / Math.ceil(total / per);
  // Rollups not yet complete, by the end of their bucket (only a few ends are open at a time).
  const open = new Map<number, Map<string, PendingRollup>>();
  const complete = (before: number): Record<string, unknown>[] => {
    const done: Record<string, unknown>[] = [];
    for (const [end, group] of open) {
      if (end > before) continue;
      const dims = new Map<string, PendingRollup[]>();
      for (const p of group.values()) {
        if (!p.key.dim) done.push(rollups.itemOf(p.key, p.agg));
        else dims.set(`${p.key.gran}|${p.key.bucket}`, [...(dims.get(`${p.key.gran}|${p.key.bucket}`) ?? []), p]);
      }
      // Each bucket's dimension items as the ingest would leave them: the busiest values admitted, the rest in a remainder.
      for (const bucket of dims.values()) for (const item of admittedItems(rollups, bucket)) done.push(item);
      open.delete(end);
    }
    return done;
  };
  const add = (p: PendingRollup, id: string) => {
    const end = p.key.bucket + GRANULARITY_MS[p.key.gran];
    let group = open.get(end);
    if (!group) open.set(end, (group = new Map()));
    const seen = group.get(id);
    if (seen) mergeInto(seen.agg, p.agg);
    else group.set(id, p);
  };
  return (from: number, to: number) => {
    const out: Record<string, unknown>[] = [];
    // As a table whose ingest wrote totals from its first batch: the marker predates every seeded bucket.
    if (from === 0 && TOTALS) {
      out.push({ ...markerKey('totals', wsId), _type: 'RollupTotalsFrom', from: start - DAY_MS });
      out.push({ ...markerKey('dimensions', wsId), _type: 'RollupDimensionsFrom', from: start - DAY_MS });
    }
    for (let block = Math.floor(from / per); block * per < to; block++) {
      const events = syntheticEvents(per, { start: start + block * slice, spanMs: slice, workspaceId: wsId, organisationId: orgId, seed: block + 1 });
      const mine = events
        .slice(Math.max(from, block * per) - block * per, Math.min(to, (block + 1) * per) - block * per)
        .map((e, i) => ({ ...e, api_key_id: keyInUse(block * per + i) }));
      for (const e of mine) out.push(store.itemOf(e), store.pointerOf(e));
      for (const [id, p] of rollupsOf(mine.map((event) => ({ messageId: event.id, event })))) add(p, id);
      for (const item of complete(start + (block + 1) * slice)) out.push(item);
    }
    if (to >= total) for (const item of complete(Infinity)) out.push(item);
    return out;
  };
}

/** Keys sending requests: a few busy ones and a long tail (key n sends about as much as all keys past 2n). */
const KEYS_IN_USE = 20_000;
const keyInUse = (i: number): string => {
  const r = (Math.imul(i + 1, 2_654_435_761) >>> 0) / 2 ** 32;
  return `key-${Math.floor(KEYS_IN_USE * r ** 4)}`;
};

/** One bucket's dimension items and its admitted sets, as items. */
function admittedItems(rollups: RollupStore, bucket: readonly PendingRollup[]): Record<string, unknown>[] {
  const { placed, sets } = admitBusiest(bucket);
  const first = bucket[0] as PendingRollup;
  const admission = {
    ...admissionKey(first.key.ws, first.key.gran, bucketKey(first.key.bucket)),
    _type: 'RollupAdmission',
    ttl: rollups.ttlOf(first.key),
    ...Object.fromEntries(Object.entries(sets).map(([dim, ids]) => [`v_${dim}`, ids])),
  };
  return [...placed.map((p) => rollups.itemOf(p.key, p.agg)), admission];
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

/** The lists the console's pages load (`console/src/pages/*`, `console/src/resources.ts`). */
async function listPaths(url: string, wsId: string): Promise<Record<string, string>> {
  const first = (await (await fetch(`${url}/v1/logs?page_size=50`, { headers: { 'x-gw-api-key': ADMIN_KEY } })).json()) as { next_cursor?: string | null };
  const keys = (await (await fetch(`${url}/v1/api-keys?page_size=50&cursor=`, { headers: { 'x-gw-api-key': ADMIN_KEY } })).json()) as {
    next_cursor?: string | null;
  };
  const day = new Date(Date.now() - 86_400_000).toISOString();
  const lists: Record<string, string> = {
    'api-keys (console page)': '/v1/api-keys?page_size=20&cursor=',
    'api-keys (cursor, first page)': '/v1/api-keys?page_size=50&cursor=',
    ...(keys.next_cursor ? { 'api-keys (cursor, next page)': `/v1/api-keys?page_size=50&cursor=${keys.next_cursor}` } : {}),
    'api-keys of a workspace (cursor)': `/v1/api-keys?workspace_id=${wsId}&page_size=50&cursor=`,
    logs: '/v1/logs?page_size=50',
    ...(first.next_cursor ? { 'logs (next page)': `/v1/logs?page_size=50&cursor=${first.next_cursor}` } : {}),
    'logs filtered by model': '/v1/logs?page_size=50&model=gpt-4o-mini',
    'logs filtered by status': '/v1/logs?page_size=50&status_code=500',
    'logs filtered by time range': `/v1/logs?page_size=50&time_of_generation_min=${day}`,
    'logs filtered by trace (rare)': '/v1/logs?page_size=50&trace_id=trace-7&status_code=502',
    'audit logs': '/v1/audit-logs?page_size=50',
    users: '/v1/admin/users?page_size=50',
    invites: '/v1/admin/users/invites?page_size=50',
    workspaces: '/v1/admin/workspaces?page_size=50',
    'workspace members': `/v1/admin/workspaces/${wsId}/users?page_size=50`,
  };
  // The overview's charts (console/src/pages/overview.tsx) for each range it offers.
  const now = Date.now();
  for (const [range, ms, granularity] of [
    ['last hour', 3_600_000, 'minute'],
    ['last 24 hours', 86_400_000, 'hour'],
    ['last 7 days', 7 * 86_400_000, 'day'],
  ] as const) {
    const q = `time_of_generation_min=${new Date(now - ms).toISOString()}&time_of_generation_max=${new Date(now).toISOString()}&granularity=${granularity}`;
    for (const graph of ['requests', 'cost', 'latency']) lists[`overview ${graph}, ${range}`] = `/v1/analytics/graphs/${graph}?${q}`;
  }
  // Each grouped view (the groups API), and charts filtered on one value (a busy key, a rare key, a model).
  for (const [range, ms] of [
    ['last hour', 3_600_000],
    ['last 24 hours', 86_400_000],
    ['last 7 days', 7 * 86_400_000],
  ] as const) {
    const q = `time_of_generation_min=${new Date(now - ms).toISOString()}&time_of_generation_max=${new Date(now).toISOString()}`;
    for (const by of ['model', 'api_key', 'provider', 'ai_service', 'status_code', 'config', 'prompt'])
      lists[`grouped by ${by}, ${range}`] = `/v1/analytics/groups/${by}?${q}&columns=cost,avg_latency&page_size=50`;
    lists[`requests of a busy key, ${range}`] = `/v1/analytics/graphs/requests?${q}&api_key_ids=key-0`;
    lists[`requests of a rare key, ${range}`] = `/v1/analytics/graphs/requests?${q}&api_key_ids=key-19999`;
    lists[`cost of one model, ${range}`] = `/v1/analytics/graphs/cost?${q}&ai_model=gpt-4o`;
  }
  // The console's generic resource pages (20 a page there; 50 here).
  for (const path of [
    '/v1/configs',
    '/v1/prompts',
    '/v1/prompts/partials',
    '/v1/collections',
    '/v1/labels',
    '/v1/guardrails',
    '/v1/integrations',
    '/v1/providers',
    '/v1/virtual-keys',
    '/v1/secret-references',
    '/v1/mcp-integrations',
    '/v1/mcp-servers',
    '/v1/model-configs/pricing',
    '/v1/policies/rate-limits',
    '/v1/policies/usage-limits',
    '/v1/logs/exports',
  ]) {
    lists[path.slice(4)] = `${path}?page_size=50`;
  }
  return lists;
}

const gantryConfig = (endpoint: string): AppConfig =>
  loadConfig({
    TABLE_NAME: 'gantry',
    DYNAMODB_ENDPOINT: endpoint,
    AWS_REGION: 'local',
    LOG_LEVEL: 'ERROR',
    GW_KEY_LIFECYCLE_INTERVAL_SECONDS: '0',
    GW_DYNAMODB_REQUEST_TIMEOUT_MS: '120000',
  });

/** Creates the table and the organisation through DynamoDB Local, then writes the keys and logs straight into its store. */
async function seed(dataDir: string, heapMb: number): Promise<{ organisationId: string; workspaceId: string; seconds: Record<string, number> }> {
  const ddb = await startDynamoDBLocal({ dataDir, heapMb });
  let deps: CoreDeps | undefined;
  let boot: { organisationId: string; workspaceId: string };
  try {
    const config = gantryConfig(ddb.endpoint);
    const client = new DynamoDBClient({ endpoint: ddb.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await ensureTable(client, config.tableName);
    client.destroy();
    deps = createDeps(config, localAdapters(config));
    boot = await ensureBootstrap(deps, ADMIN_KEY);
  } finally {
    deps?.upstream.close();
    await ddb.stop();
  }
  const seconds: Record<string, number> = {};
  if (!KEYS && !LOGS) return { ...boot, seconds };
  const table = new BulkTable(dataDir, 'gantry');
  try {
    if (KEYS) seconds.keys = writeAll(table, 'api keys', KEYS, keyItems(boot.organisationId, boot.workspaceId), 2);
    if (LOGS) seconds.logs = writeAll(table, 'request logs', LOGS, logItems(deps, boot.organisationId, boot.workspaceId, LOGS), 2);
  } finally {
    const t = Date.now();
    table.close();
    seconds.indexes = (Date.now() - t) / 1000;
    progress(`indexes rebuilt in ${seconds.indexes.toFixed(0)} s`);
  }
  return { ...boot, seconds };
}

/** The seeded key authenticates (its hash item is found) and an unknown key does not. */
async function checkSeededKey(url: string): Promise<void> {
  const status = async (key: string) => (await fetch(`${url}/v1/api-keys?page_size=1&cursor=`, { headers: { 'x-gw-api-key': key } })).status;
  const [seeded, unknown] = [await status(SEEDED_KEY), await status(`${SEEDED_KEY}x`)];
  // The seeded key may call the gateway only: the admin list refuses it for its scopes (403), not as unknown (401).
  if (KEYS && seeded !== 403) throw new Error(`the seeded key answered ${seeded}, expected 403 (known key, no admin scope)`);
  if (unknown !== 401) throw new Error(`an unknown key answered ${unknown}, expected 401`);
}

async function main(): Promise<void> {
  const dataDir = args['data-dir'] ?? mkdtempSync(path.join(os.tmpdir(), 'gantry-seed-'));
  const heapMb = count('heap-mb', args['heap-mb']);
  try {
    const { workspaceId, seconds } = await seed(dataDir, heapMb);
    const ddb = await startDynamoDBLocal({ dataDir, heapMb });
    const config = gantryConfig(ddb.endpoint);
    const deps = createDeps(config, localAdapters(config));
    const lists: Record<string, unknown> = {};
    try {
      const server = await startLocalServer({ deps });
      try {
        await checkSeededKey(server.url);
        for (const [name, path] of Object.entries(await listPaths(server.url, workspaceId))) {
          lists[name] = { path, ...(await time(server.url, path)) };
          progress(`${name}: ${JSON.stringify(lists[name])}`);
        }
      } finally {
        await server.close();
      }
    } finally {
      deps.upstream.close();
      await ddb.stop();
    }
    const over = Object.entries(lists)
      .filter(([, r]) => (r as { p95_ms: number }).p95_ms > LIST_BUDGET_P95_MS)
      .map(([n]) => n);
    const seeded = { api_keys: KEYS, request_logs: LOGS, write_seconds: seconds };
    console.log(
      JSON.stringify({ seeded, data_dir: args['data-dir'] ?? null, samples: SAMPLES, budget_p95_ms: LIST_BUDGET_P95_MS, over_budget: over, lists }, null, 2),
    );
  } finally {
    if (!args['data-dir']) rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
