/**
 * Prompt references under measurement (issue 17): what a warm lookup through `deps.prompts` costs,
 * and how long another instance (a second set of dependencies on the same table, as a second Lambda
 * instance) keeps serving a label or default pointer after it moved. Each round reads the pointer
 * on the other instance at a random point of its cache window, moves it on the writer, then polls
 * the other instance every 5 ms: `stale_after_move_ms` is the last stale answer's time after the
 * move (the promise: under 5000), `fresh_after_move_ms` the first fresh one's. Real clock, DynamoDB
 * Local in memory. Run alone with `node test/bench/prompts.ts`, or from run.ts.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CollectionService } from '../../layers/core/src/admin/collections/service.ts';
import { PromptService } from '../../layers/core/src/admin/prompts/service.ts';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { loadConfig } from '../../layers/core/src/config.ts';
import { createDeps, type CoreDeps } from '../../layers/core/src/deps.ts';
import { localAdapters } from '../../layers/core/src/local-adapters.ts';
import type { PromptSource } from '../../layers/core/src/prompts/contract.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { startDynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { round } from './load.ts';

const KEY = 'gw_bench-prompts-owner-key-0123456789abcdef';
const ROUNDS = 3;
const LOOKUPS = 20_000;

/** Nearest-rank percentile of microsecond samples. */
const percentile = (us: readonly number[], p: number): number => {
  const sorted = [...us].sort((a, b) => a - b);
  return round(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN, 2);
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function depsOn(endpoint: string): CoreDeps {
  const config = loadConfig({ TABLE_NAME: 'gantry-bench-prompts', DYNAMODB_ENDPOINT: endpoint, AWS_REGION: 'local' });
  return createDeps(config, localAdapters(config));
}

/** Milliseconds after the move of the last stale and the first fresh answer on `reader`. */
async function pointerRound(reader: PromptSource, read: () => Promise<number | undefined>, move: () => Promise<void>, fresh: number) {
  reader.invalidate();
  await read();
  await sleep(Math.random() * 5_000);
  await move();
  const moved = performance.now();
  let lastStale = 0;
  for (;;) {
    const seen = await read();
    const at = performance.now() - moved;
    if (seen === fresh) return { stale: lastStale, fresh: at };
    lastStale = at;
    if (at > 30_000) throw new Error('the pointer never moved');
    await sleep(5);
  }
}

export async function benchPromptPointers() {
  const ddb = await startDynamoDBLocal({ dataDir: ':memory:' });
  try {
    const client = new DynamoDBClient({ endpoint: ddb.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await ensureTable(client, 'gantry-bench-prompts');
    client.destroy();
    const writer = depsOn(ddb.endpoint);
    const other = depsOn(ddb.endpoint).prompts;
    if (!other) throw new Error('createDeps sets deps.prompts');
    await ensureBootstrap(writer, KEY);
    const owner = await writer.keyAuth.authenticateRequest(new Headers({ 'x-gw-api-key': KEY }), 'admin');
    const prompts = new PromptService(writer);
    const collection = await new CollectionService(writer).create(owner, { name: 'Bench', workspace_id: 'default' });
    await prompts.create(owner, { name: 'Bench', collection_id: collection.id, string: 'Hello {{name}}', parameters: {} });
    await prompts.update(owner, 'bench', { patch: true, string: 'Hi {{name}}' });
    await prompts.label(owner, 'bench', '1', 'production');

    const lookups: number[] = [];
    for (let i = 0; i < LOOKUPS; i++) {
      const t = process.hrtime.bigint();
      await other.prompt(owner, i % 2 ? 'bench@production' : 'bench');
      lookups.push(Number(process.hrtime.bigint() - t) / 1000);
    }
    // The first tenth warms the JIT.
    const warm = lookups.slice(LOOKUPS / 10);

    const label = [];
    const byDefault = [];
    const readLabel = async () => (await other.prompt(owner, 'bench@production'))?.version;
    const readDefault = async () => (await other.prompt(owner, 'bench'))?.version;
    let writerSaw = true;
    for (let i = 0; i < ROUNDS; i++) {
      // Versions 2, 1, 2, 1: each round moves the pointer off where the last one left it.
      const to = i % 2 === 0 ? 2 : 1;
      label.push(await pointerRound(other, readLabel, async () => void (await prompts.label(owner, 'bench', String(to), 'production')), to));
      byDefault.push(await pointerRound(other, readDefault, async () => void (await prompts.admin.makeDefault(owner, 'bench', to)), to));
      writerSaw &&= (await writer.prompts?.prompt(owner, 'bench'))?.version === to;
    }
    const all = [...label, ...byDefault];
    writer.upstream.close();
    return {
      warm_lookup_us: { n: warm.length, p50: percentile(warm, 0.5), p99: percentile(warm, 0.99) },
      label_move: label.map((r) => ({ stale_after_move_ms: round(r.stale, 1), fresh_after_move_ms: round(r.fresh, 1) })),
      make_default: byDefault.map((r) => ({ stale_after_move_ms: round(r.stale, 1), fresh_after_move_ms: round(r.fresh, 1) })),
      max_stale_after_move_ms: round(Math.max(...all.map((r) => r.stale)), 1),
      writer_sees_its_own_change_at_once: writerSaw,
      note: 'stale_after_move_ms: the last answer with the old version, after the move, on another instance; fresh_after_move_ms: the first with the new one (polled every 5 ms)',
    };
  } finally {
    await ddb.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(await benchPromptPointers(), null, 2)}\n`);
  process.exit(0);
}
