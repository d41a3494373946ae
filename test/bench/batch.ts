/**
 * `npm run bench:batch`: a batch run by the gateway, locally (issue 20 item 6). A 10,000-line
 * JSONL file is uploaded to Gantry (direct mode, DynamoDB Local in memory, request logs on) and
 * run against a mock provider that answers each line after 20 ms, by the in-process driver. Prints
 * one JSON document: wall time from create to `completed`, lines per second, and the lines lost
 * (in neither file) and duplicated (called more than once, or in the files twice), with the CPU
 * per line of Gantry and of DynamoDB Local (its Java process, read from /proc on Linux).
 *
 * BENCH_BATCH_WARMUP=<lines> runs a batch of that many lines first, not measured: a fresh
 * DynamoDB Local spends its first minute or so compiling (the JIT), which a long-running
 * `npm start` has behind it. GW_REQUEST_LOGS=OFF runs it without request logs: the engine's own cost.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startDynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { startLocalServer } from '../../lambdas/local/server.ts';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { loadConfig } from '../../layers/core/src/config.ts';
import { createDeps } from '../../layers/core/src/deps.ts';
import { attachLocalWorkers } from '../../layers/core/src/local-adapters.ts';
import { localAdapters } from '../../layers/core/src/local-adapters.ts';
import type { LocalBatchDriver } from '../../layers/core/src/batches/local-driver.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { startMockBatchProvider } from '../support/mock-batch-provider.ts';
import { startTableProxy } from '../support/table-proxy.ts';

const LINES = Number(process.env.BENCH_BATCH_LINES ?? 10_000);
const DELAY_MS = Number(process.env.BENCH_BATCH_DELAY_MS ?? 20);
const WARMUP = Number(process.env.BENCH_BATCH_WARMUP ?? 0);
/** Set: DynamoDB requests go through a counting proxy, and the JSON says how many of each operation a line cost. */
const COUNT_REQUESTS = process.env.BENCH_BATCH_COUNT_REQUESTS === '1';
const log = (msg: string) => process.stderr.write(`[bench:batch] ${msg}\n`);

/** CPU time (user + system) of a process so far, from /proc (Linux); undefined elsewhere. */
function javaCpuMs(pid: number): number | undefined {
  try {
    // Fields after the command name: utime and stime are the 12th and 13th, in clock ticks (100 a second).
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

const ddb = await startDynamoDBLocal({ dataDir: ':memory:' });
const proxy = COUNT_REQUESTS ? await startTableProxy(ddb.endpoint) : undefined;
const mock = await startMockBatchProvider({ delayMs: DELAY_MS });
try {
  const tmp = (name: string) => mkdtempSync(path.join(os.tmpdir(), `gantry-bench-${name}-`));
  const config = loadConfig({
    TABLE_NAME: 'gantry-bench-batch',
    DYNAMODB_ENDPOINT: proxy?.url ?? ddb.endpoint,
    AWS_REGION: 'local',
    GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1',
    GW_BLOB_DIR: tmp('blobs'),
    GW_OUTBOX_DIR: tmp('outbox'),
    LOG_LEVEL: 'SILENT',
    ...(process.env.GW_REQUEST_LOGS ? { GW_REQUEST_LOGS: process.env.GW_REQUEST_LOGS } : {}),
  });
  const client = new DynamoDBClient({ endpoint: ddb.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await ensureTable(client, config.tableName);
  client.destroy();
  const deps = createDeps(config, localAdapters(config));
  attachLocalWorkers(deps);
  const boot = await ensureBootstrap(deps);
  const server = await startLocalServer({ deps, mode: 'direct' });
  const admin = { 'x-gw-api-key': boot.createdAdminKey ?? '', 'content-type': 'application/json' };
  const keyRes = await fetch(`${server.url}/v1/api-keys/workspace/service`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ name: 'bench', workspace_id: 'default', scopes: ['completions.write'] }),
  });
  const key = ((await keyRes.json()) as { key: string }).key;

  const headers = {
    'x-gw-api-key': key,
    'x-gw-provider': 'openai',
    'x-gw-custom-host': `${mock.url}/v1`,
    authorization: 'Bearer sk-x',
    'content-type': 'application/json',
  };

  /** Uploads `ids` as a batch's lines, creates the batch and waits for the driver to finish it. */
  const runBatch = async (ids: string[]) => {
    const jsonl = ids
      .map((id) =>
        JSON.stringify({
          custom_id: id,
          method: 'POST',
          url: '/v1/chat/completions',
          body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: id }] },
        }),
      )
      .join('\n');
    const form = new FormData();
    form.append('file', new Blob([jsonl]), 'bench.jsonl');
    form.append('purpose', 'batch');
    const file = (await (await fetch(`${server.url}/v1/files`, { method: 'POST', headers: { 'x-gw-api-key': key }, body: form })).json()) as { id: string };
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const javaBefore = javaCpuMs(ddb.pid);
    const created = (await (
      await fetch(`${server.url}/v1/batches`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: 'immediate' }),
      })
    ).json()) as { id: string };
    log(`batch ${created.id}: ${ids.length} lines, mock answers after ${DELAY_MS} ms`);
    await (deps.batchRunner as LocalBatchDriver).idle();
    const javaAfter = javaCpuMs(ddb.pid);
    return {
      id: created.id,
      wallMs: performance.now() - started,
      cpu: process.cpuUsage(cpuBefore),
      javaMs: javaBefore === undefined || javaAfter === undefined ? undefined : javaAfter - javaBefore,
    };
  };

  if (WARMUP > 0) {
    await runBatch(Array.from({ length: WARMUP }, (_, i) => `warmup-${i}`));
    mock.calls.clear();
    mock.peak = 0;
  }
  proxy?.counts.clear();
  const ids = Array.from({ length: LINES }, (_, i) => `line-${i}`);
  const { id: batchId, wallMs, cpu, javaMs } = await runBatch(ids);
  const batch = (await (await fetch(`${server.url}/v1/batches/${batchId}`, { headers })).json()) as Record<string, unknown> & {
    output_file_id: string | null;
    error_file_id: string | null;
  };

  const seen = new Map<string, number>();
  for (const fileId of [batch.output_file_id, batch.error_file_id]) {
    if (!fileId) continue;
    const text = await (await fetch(`${server.url}/v1/files/${fileId}/content`, { headers: { 'x-gw-api-key': key } })).text();
    for (const line of text.split('\n').filter(Boolean)) {
      const cid = (JSON.parse(line) as { custom_id: string }).custom_id;
      seen.set(cid, (seen.get(cid) ?? 0) + 1);
    }
  }
  if (batch.error_file_id) {
    const text = await (await fetch(`${server.url}/v1/files/${batch.error_file_id}/content`, { headers: { 'x-gw-api-key': key } })).text();
    for (const line of text.split('\n').filter(Boolean).slice(0, 3)) log(`error line: ${line.slice(0, 400)}`);
  }
  const lost = ids.filter((id) => !seen.has(id)).length;
  const duplicated = ids.filter((id) => (seen.get(id) ?? 0) > 1 || (mock.calls.get(id) ?? 0) > 1).length;
  const result = {
    lines: LINES,
    provider_delay_ms: DELAY_MS,
    status: batch.status,
    request_counts: batch.request_counts,
    wall_time_s: Math.round(wallMs) / 1000,
    lines_per_s: Math.round((LINES / wallMs) * 1000 * 10) / 10,
    warmup_lines: WARMUP,
    provider_peak_concurrency: mock.peak,
    // Gantry's own CPU per line (this process, the mock provider included), DynamoDB Local's (its Java process), and how busy the machine was.
    gantry_cpu_ms_per_line: Math.round(((cpu.user + cpu.system) / 1000 / LINES) * 100) / 100,
    dynamodb_local_cpu_ms_per_line: javaMs === undefined ? null : Math.round((javaMs / LINES) * 100) / 100,
    load_average_1m: Math.round(os.loadavg()[0]! * 10) / 10,
    ...(proxy ? { dynamodb_requests_per_line: Object.fromEntries([...proxy.counts].map(([op, n]) => [op, Math.round((n / LINES) * 1000) / 1000])) } : {}),
    lost,
    duplicated,
  };
  console.log(JSON.stringify(result, null, 2));
  await server.close();
  await proxy?.close();
  deps.upstream.close();
  process.exitCode = result.status === 'completed' && lost === 0 && duplicated === 0 ? 0 : 1;
} finally {
  await mock.close();
  await ddb.stop();
}
