/**
 * `node test/bench/admin-writes.ts [--keys N] [--runs R] [--bulk] [--backfill] [--before] [--heap-mb MB]`:
 * the admin writes that used to read every key of the organisation (user delete, config delete,
 * workspace delete, the key lifecycle sweep), timed on DynamoDB Local with one organisation of N
 * keys (default 100,000). Prints, as JSON on stdout, each write's p50 and max over R runs (default
 * 5, after one warm-up run) and the items it read, and with `--before` what the organisation's full
 * key list (the old code's read) costs. Not part of `npm test`.
 *
 * The keys are written through BatchWriteItem, or with `--bulk` straight into DynamoDB Local's store
 * while it is stopped (ddb-local-store.ts; for a million keys), with their index entries as the key
 * writes make them; with `--backfill` without them and the organisation's backfill marker, as a
 * table from before the index holds them, and the one-time backfill is timed first.
 * A quarter are plain, a quarter user keys of 1,000 other users, a quarter expire in 60-90 days and
 * pin a config, a quarter rotate monthly in 40 days: the indexes hold many entries, none due.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { startDynamoDBLocal, type DynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { runKeyLifecycle } from '../../layers/core/src/admin/api-keys/lifecycle.ts';
import { newKeyRecord } from '../../layers/core/src/admin/api-keys/service.ts';
import { createConfigSchema } from '../../layers/core/src/admin/configs/schema.ts';
import { ConfigService } from '../../layers/core/src/admin/configs/service.ts';
import { UserService } from '../../layers/core/src/admin/users/service.ts';
import { createWorkspaceSchema } from '../../layers/core/src/admin/workspaces/schema.ts';
import { WorkspaceService } from '../../layers/core/src/admin/workspaces/service.ts';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { loadConfig, type AppConfig } from '../../layers/core/src/config.ts';
import { createDeps, type CoreDeps } from '../../layers/core/src/deps.ts';
import { localAdapters } from '../../layers/core/src/local-adapters.ts';
import { apiKeyIndexItems, KeyIndexBackfill } from '../../layers/core/src/store/api-key-index.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { ApiKey, ApiKeyByHash, type ApiKeyRecord } from '../../layers/core/src/store/entities.ts';
import { IdentityRepository, type UserRecord } from '../../layers/core/src/store/identity.ts';
import { countReads, ownerPrincipal } from '../support/table-reads.ts';
import { BulkTable } from './ddb-local-store.ts';

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '5' },
    bulk: { type: 'boolean', default: false },
    backfill: { type: 'boolean', default: false },
    /** Also time the organisation's full key list, what each write read before the index (minutes at 100,000). */
    before: { type: 'boolean', default: false },
    'heap-mb': { type: 'string', default: '2048' },
  },
});
const KEYS = Number(args.keys);
const RUNS = Math.max(1, Number(args.runs));
const DAY = 86_400_000;
const TABLE = 'gantry';

const progress = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);

const gantryConfig = (endpoint: string, outbox: string): AppConfig =>
  loadConfig({
    TABLE_NAME: TABLE,
    DYNAMODB_ENDPOINT: endpoint,
    AWS_REGION: 'local',
    LOG_LEVEL: 'ERROR',
    GW_KEY_LIFECYCLE_INTERVAL_SECONDS: '0',
    GW_DYNAMODB_REQUEST_TIMEOUT_MS: '120000',
    GW_OUTBOX_DIR: outbox,
  });

/** The seeded keys `from` to `to` (records only: their items are written by the caller). */
function seededKeys(orgId: string, wsId: string, from: number, to: number): ApiKeyRecord[] {
  const base = Date.UTC(2026, 0, 1);
  const now = Date.now();
  const out: ApiKeyRecord[] = [];
  for (let i = from; i < to; i++) {
    const kind = i % 4;
    const { record } = newKeyRecord(
      {
        organisation_id: orgId,
        workspace_id: wsId,
        user_id: kind === 1 ? `user-${i % 1000}` : null,
        type: kind === 1 ? 'workspace-user' : 'workspace-service',
        name: `seeded key ${i}`,
        description: null,
        scopes: ['completions.write'],
        expires_at: kind === 2 ? new Date(now + (60 + (i % 30)) * DAY).toISOString() : null,
        owner: false,
        created_by: null,
      },
      base + i * 1000,
    );
    if (kind === 2) record.defaults = { config_id: 'kept-config' };
    if (kind === 3)
      record.rotation_policy = { rotation_period: 'monthly', next_rotation_at: new Date(now + 40 * DAY).toISOString(), key_transition_period_ms: 3_600_000 };
    out.push(record);
  }
  return out;
}

const itemsOf = (keys: readonly ApiKeyRecord[]) =>
  keys.flatMap((k) => [ApiKey.toItem(k), ApiKeyByHash.toItem(k), ...(args.backfill ? [] : apiKeyIndexItems(k))]);

/** BatchWriteItem, 25 items a request, `parallel` requests at a time. */
async function batchWrite(deps: CoreDeps, items: Record<string, unknown>[], parallel = 8): Promise<void> {
  const chunks: Record<string, unknown>[][] = [];
  for (let i = 0; i < items.length; i += 25) chunks.push(items.slice(i, i + 25));
  const worker = async () => {
    for (let chunk = chunks.pop(); chunk; chunk = chunks.pop()) {
      let requests = chunk.map((Item) => ({ PutRequest: { Item } }));
      while (requests.length) {
        const out = await deps.repos.table.doc.send(new BatchWriteCommand({ RequestItems: { [TABLE]: requests } }));
        requests = (out.UnprocessedItems?.[TABLE] ?? []) as typeof requests;
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

interface Stack {
  ddb: DynamoDBLocal;
  deps: CoreDeps;
}

async function start(dataDir: string, outbox: string): Promise<Stack> {
  const ddb = await startDynamoDBLocal({ dataDir, heapMb: Number(args['heap-mb']) });
  const config = gantryConfig(ddb.endpoint, outbox);
  const client = new DynamoDBClient({ endpoint: ddb.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await ensureTable(client, TABLE);
  client.destroy();
  return { ddb, deps: createDeps(config, localAdapters(config)) };
}

async function stop(s: Stack): Promise<void> {
  s.deps.upstream.close();
  await s.ddb.stop();
}

/** Seeds the keys (with `--backfill`, as before the index: no entries, no backfill marker). */
async function seed(dataDir: string, outbox: string): Promise<{ stack: Stack; org: string; ws: string; seconds: number }> {
  let stack = await start(dataDir, outbox);
  const { organisationId: org, workspaceId: ws } = await ensureBootstrap(stack.deps);
  if (args.backfill) await stack.deps.repos.table.doc.send(new DeleteCommand({ TableName: TABLE, Key: KeyIndexBackfill.key({ organisation_id: org }) }));
  const started = Date.now();
  const chunk = 10_000;
  if (args.bulk) {
    await stop(stack);
    const table = new BulkTable(dataDir, TABLE);
    try {
      for (let from = 0; from < KEYS; from += chunk) table.write(itemsOf(seededKeys(org, ws, from, Math.min(KEYS, from + chunk))));
    } finally {
      table.close();
    }
    stack = await start(dataDir, outbox);
  } else {
    for (let from = 0; from < KEYS; from += chunk) {
      await batchWrite(stack.deps, itemsOf(seededKeys(org, ws, from, Math.min(KEYS, from + chunk))));
      progress(`keys: ${Math.min(KEYS, from + chunk).toLocaleString('en')} / ${KEYS.toLocaleString('en')}`);
    }
  }
  return { stack, org, ws, seconds: (Date.now() - started) / 1000 };
}

interface Sample {
  ms: number;
  reads: number;
}

async function timed(fn: () => Promise<unknown>, deps: CoreDeps): Promise<Sample> {
  const t = performance.now();
  const { reads } = await countReads(deps.repos.table.doc, fn);
  return { ms: performance.now() - t, reads: reads.items };
}

const summary = (samples: Sample[]) => {
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  return {
    p50_ms: Math.round(ms[Math.floor((ms.length - 1) / 2)] as number),
    max_ms: Math.round(ms.at(-1) as number),
    items_read: Math.max(...samples.map((s) => s.reads)),
  };
};

/** One run of each write, with the few keys each is about made just before. */
async function runOnce(deps: CoreDeps, org: string, ws: string, out: Record<string, Sample[]>): Promise<void> {
  const owner = ownerPrincipal(org);
  const push = (name: string, s: Sample) => (out[name] ??= []).push(s);
  const at = new Date().toISOString();
  const userKey = (userId: string) =>
    newKeyRecord(
      {
        organisation_id: org,
        workspace_id: ws,
        user_id: userId,
        type: 'workspace-user',
        name: 'k',
        description: null,
        scopes: [],
        expires_at: null,
        owner: false,
        created_by: null,
      },
      Date.now(),
    ).record;

  // User delete: a user with a membership and three keys.
  const identity = new IdentityRepository(deps.repos.table);
  const user: UserRecord = {
    id: randomUUID(),
    organisation_id: org,
    email: `${randomUUID()}@example.com`,
    first_name: null,
    last_name: null,
    role: 'member',
    created_at: at,
    last_updated_at: at,
  };
  await deps.repos.table.transact(identity.userPuts(user));
  await identity.addMembers([{ organisation_id: org, workspace_id: ws, user_id: user.id, role: 'member', created_at: at, last_updated_at: at }]);
  for (let i = 0; i < 3; i++) await deps.repos.apiKeys.create(userKey(user.id));
  push('user_delete (3 keys)', await timed(() => new UserService(deps).delete(owner, user.id), deps));

  // Config delete: refused while two keys pin it, then done.
  const configs = new ConfigService(deps);
  const config = await configs.create(owner, createConfigSchema.parse({ name: `bench ${randomUUID()}`, workspace_id: ws, config: { provider: 'openai' } }));
  const pins = [0, 1].map(() => ({ ...userKey(randomUUID()), type: 'workspace-service' as const, user_id: null, defaults: { config_id: config.id } }));
  for (const k of pins) await deps.repos.apiKeys.create(k);
  push('config_delete refused (2 keys pin it)', await timed(() => configs.delete(owner, config.id).catch(() => undefined), deps));
  for (const k of pins) await deps.repos.apiKeys.delete(k);
  push('config_delete', await timed(() => configs.delete(owner, config.id), deps));

  // Workspace delete: an empty workspace.
  const workspaces = new WorkspaceService(deps);
  const w = await workspaces.create(owner, createWorkspaceSchema.parse({ name: `bench ${randomUUID()}` }));
  push('workspace_delete', await timed(() => workspaces.delete(owner, w.id), deps));

  // The lifecycle sweep: three keys expired a moment ago.
  for (let i = 0; i < 3; i++)
    await deps.repos.apiKeys.create({ ...userKey(randomUUID()), type: 'workspace-service', user_id: null, expires_at: new Date(Date.now() - 1).toISOString() });
  push('key_lifecycle sweep (3 due keys)', await timed(() => runKeyLifecycle(deps, [org]), deps));
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gantry-admin-writes-'));
  const outbox = mkdtempSync(path.join(os.tmpdir(), 'gantry-admin-writes-outbox-'));
  try {
    progress(`seeding ${KEYS.toLocaleString('en')} keys${args.bulk ? ' (bulk)' : ' (BatchWriteItem)'}`);
    const { stack, org, ws, seconds } = await seed(dataDir, outbox);
    try {
      const { deps } = stack;
      progress(`seeded in ${seconds.toFixed(0)} s`);
      const backfill = args.backfill
        ? await timed(() => deps.repos.apiKeys.backfillIndex(org, { budgetMs: Number.POSITIVE_INFINITY, nowIso: () => new Date().toISOString() }), deps)
        : undefined;
      if (backfill) progress(`backfill: ${(backfill.ms / 1000).toFixed(1)} s`);
      const fullList = args.before ? await timed(() => deps.repos.apiKeys.list(org), deps) : undefined;
      if (fullList) progress(`full key list (what each write read before): ${(fullList.ms / 1000).toFixed(1)} s`);
      const samples: Record<string, Sample[]> = {};
      // One run first, not counted: the first calls of a process (and of DynamoDB Local's JVM) are cold.
      await runOnce(deps, org, ws, {});
      for (let r = 0; r < RUNS; r++) {
        await runOnce(deps, org, ws, samples);
        progress(`run ${r + 1}/${RUNS}`);
      }
      const writes = Object.fromEntries(Object.entries(samples).map(([name, s]) => [name, summary(s)]));
      console.log(
        JSON.stringify(
          {
            keys: KEYS,
            seeding: args.bulk ? 'bulk (DynamoDB Local store)' : 'BatchWriteItem',
            runs: RUNS,
            seed_seconds: Math.round(seconds),
            backfill: backfill ? { seconds: Math.round(backfill.ms / 100) / 10, items_read: backfill.reads } : null,
            before_full_key_list: fullList ? { seconds: Math.round(fullList.ms / 100) / 10, items_read: fullList.reads } : null,
            writes,
          },
          null,
          2,
        ),
      );
    } finally {
      await stop(stack);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(outbox, { recursive: true, force: true });
  }
}

await main();
