import { buildBundle, LOCAL_BUNDLES, LOCAL_SERVER_NODE_FLAGS } from '../../infra/local-build.ts';
import { benchEngine, FALLBACK_CONFIG } from './engine.ts';
import { benchGatewayBundle } from './bundle.ts';
import { benchGuardrails } from './guardrails.ts';
import { benchPromptPointers } from './prompts.ts';
import { benchPromptRender } from './prompt-render.ts';
/**
 * `npm run bench`: measures the performance budgets (docs/design/design.md#performance-budgets) in one run and prints one JSON
 * document on stdout (progress on stderr). The mock provider, Gantry and the Portkey gateway run as
 * child processes; this process is only the load generator. Missed budgets are reported, not
 * fatal; any error (a non-200 answer, a server that does not start) exits non-zero.
 */
import os from 'node:os';
import { freePort } from '../../lambdas/local/dynamodb-local.ts';
import { ask, askRss, startNodeChild, startPortkey, stopAll, type Child } from './children.ts';
import { CHAT_BODY, closedLoop, interleaved, round, STREAM_BODY, type RunHooks, type Stats, type Target, type ThroughputResult } from './load.ts';
import { dynamoWindow } from './dynamo-window.ts';
import { benchLambda, startLambda } from './lambda-cost.ts';
import { CHAT_PATH, type IngestCountsMessage, type IngestMessage, type LimitsMessage, type PidsMessage } from './protocol.ts';
import { commandLine, cpuWindow, descendants, memoryMb } from './proc.ts';

const envInt = (name: string, fallback: number): number => {
  const raw = process.env[name];
  const v = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
};

const settings = {
  requests: envInt('BENCH_REQUESTS', 2000),
  warmup_requests: envInt('BENCH_WARMUP', 500),
  seconds: envInt('BENCH_SECONDS', 5),
  warmup_seconds: 1,
  connections: 32,
  stream_requests: envInt('BENCH_STREAM_REQUESTS', 250),
  stream_gap_ms: envInt('BENCH_STREAM_GAP_MS', 5),
  dynamodb_window_requests: envInt('BENCH_DYNAMODB_REQUESTS', 500),
  lambda_requests: envInt('BENCH_LAMBDA_REQUESTS', 1000),
};

// The performance budgets (docs/design/design.md#performance-budgets): issue 33's, as ratios to the bare
// proxy measured in the same run where it gives them so; the peer's figures are reported beside them, not budgeted.
const BUDGETS = {
  // Issue 33, local server: Gantry's own CPU per request at 32 connections, as a multiple of the bare proxy's.
  gantry_cpu_per_request_vs_bare_proxy: 2,
  // The log-ingest worker plus DynamoDB Local spend less CPU per log than Gantry's own request path per request.
  logging_cpu_per_log_vs_gantry_cpu_per_request: 1,
  // DynamoDB items written per log, rollups included, amortised.
  dynamodb_items_per_log: 1.5,
  throughput_logs_on_vs_bare_proxy: 0.5,
  throughput_logs_off_vs_bare_proxy: 0.7,
  // Added latency at 1 connection as a multiple of the bare proxy's added latency.
  added_p50_vs_bare_proxy: 1.5,
  added_p99_vs_bare_proxy: 2,
  // One exact rate-limit policy against none (p50).
  rate_limit_policy_added_p50_ms: 1,
  // First streamed chunk (p50) after the bare proxy's.
  first_chunk_after_bare_proxy_ms: 0.3,
  // Private memory under load, and flat: back within this much of idle once the load is over.
  private_mb_under_load: 100,
  private_mb_after_load_above_idle: 10,
  // Issue 33, Lambda: CPU per warm request without and with one exact policy; no invocation over ~1.4 ms.
  lambda_cpu_ms_no_policy: 1,
  lambda_cpu_ms_one_policy: 1.5,
  lambda_cpu_ms_burst_max: 1.4,
  gateway_bundle_kb: 300,
  gateway_cold_import_ms: 80,
  // Issue 16: a before-request hook of local checks, and a local output check on a stream.
  before_hook_added_p50_ms: 0.05,
  stream_check_added_p99_ms: 2,
  // Issue: the routing engine adds at most 50 µs per request, the failed call excluded.
  routing_engine_us: 50,
  // Issue 17: a warm prompt render.
  prompt_render_p99_ms: 1,
  // Issue 17: a label move or makeDefault reaches every warm instance within 5 s.
  prompt_pointer_stale_ms: 5_000,
};

// Bounded no matter what: a hung server must not hang the bench. BENCH_LIMIT_S sets the bound
// (default 15 minutes: an idle run takes 4-8, a loaded 2-core machine up to twice that).
const HARD_LIMIT_MS = (Number(process.env.BENCH_LIMIT_S) || 15 * 60) * 1000;

/** Figures measured so far, printed if the bench runs out of time so that a slow run still reports. */
const partial: Record<string, unknown> = {};
/** Keeps a figure for the partial report and returns it. */
const keep = <T>(name: string, value: T): T => ((partial[name] = value), value);

const benchStarted = Date.now();
// Seconds since the start on every line, so a slow step shows.
const log = (msg: string) => process.stderr.write(`[bench +${((Date.now() - benchStarted) / 1000).toFixed(1)}s] ${msg}\n`);

const openaiHeaders = { authorization: 'Bearer sk-x', 'content-type': 'application/json' };

/** One request through fetch, to check a target really answers from the mock before timing it. */
async function probe(t: Target, stream: boolean): Promise<void> {
  const res = await fetch(t.url, { method: 'POST', headers: t.headers, body: stream ? STREAM_BODY : CHAT_BODY });
  const text = await res.text();
  if (res.status !== 200 || !text.includes('chatcmpl-bench') || (stream && !text.includes('[DONE]'))) {
    throw new Error(`${t.name} probe (${stream ? 'stream' : 'json'}) answered ${res.status}: ${text.slice(0, 500)}`);
  }
}

async function waitForPortkey(t: Target, child: Child): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.proc.exitCode !== null) throw new Error(`portkey exited with code ${child.proc.exitCode}:\n${child.stderr()}`);
    try {
      await probe(t, false);
      return;
    } catch (err) {
      // Refused while it starts; any other failure is real once it listens.
      if (!(err instanceof TypeError)) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`portkey did not answer within 30 s:\n${child.stderr()}`);
}

/** The share of all cores' time spent busy over `ms`, by anyone. */
async function cpuBusy(ms: number): Promise<number> {
  const total = () => {
    let busy = 0;
    let all = 0;
    for (const { times: t } of os.cpus()) {
      busy += t.user + t.nice + t.sys + t.irq;
      all += t.user + t.nice + t.sys + t.irq + t.idle;
    }
    return { busy, all };
  };
  const a = total();
  await new Promise((r) => setTimeout(r, ms));
  const b = total();
  return b.all > a.all ? (b.busy - a.busy) / (b.all - a.all) : 0;
}

const diff = (a: Stats, b: Stats) => ({ mean: round(a.mean - b.mean), p50: round(a.p50 - b.p50), p99: round(a.p99 - b.p99) });
const budget = (measured: number, limit: number, higherIsBetter = false) => ({
  limit,
  measured,
  pass: higherIsBetter ? measured >= limit : measured <= limit,
});

async function main(): Promise<void> {
  const started = Date.now();
  const busyBefore = await cpuBusy(1_000);
  log(`machine: ${os.availableParallelism()} cores, node ${process.version}, ${Math.round(busyBefore * 100)}% busy before the bench`);
  if (busyBefore > 0.1) log('warning: the machine is not idle; results will be noisy');

  log('starting the mock provider, a bare pass-through proxy, Gantry (with DynamoDB Local) and the Portkey gateway');
  const gwEnv = { LOG_LEVEL: 'INFO' };
  // For a profile of Gantry under the bench's load, e.g. BENCH_GANTRY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof".
  // Gantry runs with the local server's heap flags, as `npm start` runs it.
  const gwNodeArgs = [...LOCAL_SERVER_NODE_FLAGS, ...(process.env.BENCH_GANTRY_NODE_ARGS ?? '').split(/\s+/).filter(Boolean)];
  const bundle = buildBundle(LOCAL_BUNDLES.bench!);
  const mockStarted = startNodeChild('mock', 'mock-provider.ts', { BENCH_STREAM_GAP_MS: String(settings.stream_gap_ms) }, 15_000);
  const [mock, bareProxy, gantry, portkeyPort, gantryNoLogs] = await Promise.all([
    mockStarted,
    mockStarted.then((m) => startNodeChild('bare_proxy', 'bare-proxy.ts', { BENCH_UPSTREAM: m.ready.url }, 15_000)),
    // Gantry runs as the same esbuild bundle `npm start` runs (and Lambda runs), not as stripped TypeScript.
    bundle.then((file) => startNodeChild('gantry', file, gwEnv, 90_000, gwNodeArgs)),
    freePort(),
    // The same Gantry without request logs, to see what logging costs the request path.
    bundle.then((file) => startNodeChild('gantry_no_logs', file, { ...gwEnv, GW_REQUEST_LOGS: 'OFF' }, 90_000, gwNodeArgs)),
  ]);
  const portkey = startPortkey(portkeyPort);
  const mockUrl = mock.ready.url;
  // Idle until the end of the run, when it is measured alone.
  const lambdaChild = startLambda(mockUrl);
  lambdaChild.catch(() => undefined);
  const apiKey = gantry.ready.apiKey;
  if (!apiKey) throw new Error('gantry did not report a workspace key');

  const targets = {
    mock_direct: { name: 'mock_direct', url: new URL(CHAT_PATH, mockUrl), headers: openaiHeaders },
    bare_proxy: { name: 'bare_proxy', url: new URL(CHAT_PATH, bareProxy.ready.url), headers: openaiHeaders },
    gantry: {
      name: 'gantry',
      url: new URL(CHAT_PATH, gantry.ready.url),
      headers: { ...openaiHeaders, 'x-gw-api-key': apiKey, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mockUrl}/v1` },
    },
    portkey: {
      name: 'portkey',
      url: new URL(CHAT_PATH, `http://127.0.0.1:${portkeyPort}`),
      headers: { ...openaiHeaders, 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${mockUrl}/v1` },
    },
  } satisfies Record<string, Target>;
  const order = [targets.mock_direct, targets.bare_proxy, targets.gantry, targets.portkey];

  await waitForPortkey(targets.portkey, portkey);
  for (const t of order) {
    await probe(t, false);
    await probe(t, true);
  }
  log(`all up in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const idle = await askRss(gantry.child);
  const idleMemory = memoryMb(gantry.child.proc.pid ?? 0);

  log(`latency, 1 connection each, interleaved: ${settings.warmup_requests} warm-up + ${settings.requests} requests per target`);
  const latency = keep('latency', await interleaved(order, CHAT_BODY, settings.warmup_requests, settings.requests, (x) => x.totalNs));

  // Routing: a three-target fallback whose first target refuses the connection, and cache hits.
  const routing = {
    gantry_fallback: {
      name: 'gantry_fallback',
      url: targets.gantry.url,
      headers: { ...openaiHeaders, 'x-gw-api-key': apiKey, 'x-gw-config': FALLBACK_CONFIG('http://127.0.0.1:1/v1', `${mockUrl}/v1`) },
    },
    gantry_cache_hit: {
      name: 'gantry_cache_hit',
      url: targets.gantry.url,
      headers: {
        ...openaiHeaders,
        'x-gw-api-key': apiKey,
        'x-gw-config': JSON.stringify({ provider: 'openai', custom_host: `${mockUrl}/v1`, cache: { mode: 'simple', max_age: 3600 } }),
      },
    },
  } satisfies Record<string, Target>;
  await probe(routing.gantry_cache_hit, false);
  log(`routing, 1 connection each, interleaved: fallback (first target down) and cache hits`);
  const routingLatency = keep(
    'routingLatency',
    await interleaved(
      [targets.mock_direct, targets.gantry, routing.gantry_fallback, routing.gantry_cache_hit],
      CHAT_BODY,
      Math.min(500, settings.warmup_requests),
      settings.requests,
      (x) => x.totalNs,
    ),
  );
  log('routing engine in process (no network)');
  const engine = await benchEngine();
  log('prompt render in process (warm)');
  const promptRender = await benchPromptRender();
  log('gateway bundle: built as cdk synth builds it, then imported cold');
  const gatewayBundle = benchGatewayBundle();

  // One matching rate limits policy: a key the policy counts beside one no policy matches.
  const limitedKey = gantry.ready.limitedApiKey;
  if (!limitedKey) throw new Error('gantry did not report a rate-limited key');
  const rateLimited: Target = { name: 'gantry_rate_limited', url: targets.gantry.url, headers: { ...targets.gantry.headers, 'x-gw-api-key': limitedKey } };
  await probe(rateLimited, false);
  const approximateKey = gantry.ready.approximateApiKey;
  if (!approximateKey) throw new Error('gantry did not report a key of an approximate-mode policy');
  const approximate: Target = {
    name: 'gantry_rate_limited_approximate',
    url: targets.gantry.url,
    headers: { ...targets.gantry.headers, 'x-gw-api-key': approximateKey },
  };
  await probe(approximate, false);
  const limitsWarmup = Math.min(500, settings.warmup_requests);
  log(`rate limits policy, 1 connection each, interleaved: ${limitsWarmup} warm-up + ${settings.requests} requests per target`);
  const countsBefore = await askLimits(gantry.child);
  const limitsLatency = keep(
    'limitsLatency',
    await interleaved([targets.mock_direct, targets.gantry, rateLimited], CHAT_BODY, limitsWarmup, settings.requests, (x) => x.totalNs),
  );
  const countsAfter = await askLimits(gantry.child);

  const counterCalls = (countsAfter.reserves - countsBefore.reserves + countsAfter.adjusts - countsBefore.adjusts) / (limitsWarmup + settings.requests);

  log(`DynamoDB calls per warm request, counted: ${settings.dynamodb_window_requests} requests without a policy, then as many with one`);
  const dynamodb = {
    no_policy: await dynamoWindow(gantry.child, targets.gantry, settings.dynamodb_window_requests),
    one_rate_limit_policy: await dynamoWindow(gantry.child, rateLimited, settings.dynamodb_window_requests),
    one_approximate_rate_limit_policy: await dynamoWindow(gantry.child, approximate, settings.dynamodb_window_requests),
  };

  // CPU per request of each process serving the run, read from /proc before and after each measured run.
  const gPids = await gantryPids(gantry.child);
  const mockPid = mock.child.proc.pid;
  const pidsOf: Record<string, Record<string, number | undefined>> = {
    mock_direct: { mock: mockPid },
    bare_proxy: { bare_proxy: bareProxy.child.proc.pid, mock: mockPid },
    gantry: { gantry: gPids.gantry, log_ingest: gPids.ingest, dynamodb_local: gPids.dynamodb, mock: mockPid },
    portkey: { portkey: portkey.proc.pid, mock: mockPid },
  };
  const throughput: Record<string, CpuThroughput> = keep('throughput', {});
  const memory = keep('gantry_memory_mb', { idle: idleMemory, peak_under_load: { rss: 0, private: 0 }, after_load: memoryMb(gPids.gantry) });
  let ingestCounts: [IngestCountsMessage, IngestCountsMessage] | undefined;
  for (const t of order) {
    log(`throughput, ${settings.connections} connections: ${t.name} (${settings.seconds} s)`);
    const isGantry = t === targets.gantry;
    const counts: Promise<IngestCountsMessage>[] = [];
    // Gantry's memory is sampled from /proc while it is under load: nothing runs in its process for it.
    let sampling = isGantry;
    const sampler = (async () => {
      while (sampling) {
        const m = memoryMb(gPids.gantry);
        if (m) memory.peak_under_load = { rss: Math.max(memory.peak_under_load.rss, m.rss), private: Math.max(memory.peak_under_load.private, m.private) };
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    try {
      throughput[t.name] = await withCpu(t, pidsOf[t.name] ?? {}, {
        onStart: () => void (isGantry && counts.push(askIngestCounts(gantry.child))),
        onEnd: () => void (isGantry && counts.push(askIngestCounts(gantry.child))),
      });
    } finally {
      sampling = false;
      await sampler;
    }
    if (isGantry) ingestCounts = (await Promise.all(counts)) as [IngestCountsMessage, IngestCountsMessage];
  }
  const afterLoad = await askRss(gantry.child);
  memory.after_load = memoryMb(gPids.gantry);
  const bareProxyAfterLoad = await askRss(bareProxy.child);
  const logging = keep('logging_32conn', loggingFigures(throughput.gantry, ingestCounts));

  log(`stream first chunk, interleaved: ${settings.stream_requests} requests per target`);
  const streamWarmup = Math.min(100, settings.warmup_requests);
  const firstChunk = keep('firstChunk', await interleaved(order, STREAM_BODY, streamWarmup, settings.stream_requests, (x) => x.firstChunkNs));

  log('guardrail hooks: a before-request hook of local checks, and a local output check on a stream');
  // 50 streams of 60 chunks each: 3,000 chunk samples per side, and the whole bench stays under 3 minutes.
  const guardrails = keep('guardrails', await benchGuardrails(gantry.ready.url, apiKey, settings.requests, Math.min(50, settings.stream_requests)));

  log('prompts: warm lookups, and label and default pointers moved under another instance (about 30 s)');
  const prompts = await benchPromptPointers();
  // Gantry has served nothing while the prompts were measured (about 30 s): does its memory come back?
  const afterIdle = await askRss(gantry.child);
  const afterIdleMemory = keep('gantry_memory_after_load_then_idle_mb', memoryMb(gPids.gantry));

  log('log-ingest worker: draining the logs of the run (at most 60 s)');
  const ingest = await askIngest(gantry.child, 'drain');

  // Request logs on and off. Locally the log-ingest worker shares the logging Gantry's process (and
  // DynamoDB Local the cores); in AWS it is a function of its own, fed by SQS. To measure what
  // logging costs the request path alone, the worker now takes the events off the queue and drops them.
  const noLogs: Target = {
    name: 'gantry_no_logs',
    url: new URL(CHAT_PATH, gantryNoLogs.ready.url),
    headers: { ...targets.gantry.headers, 'x-gw-api-key': gantryNoLogs.ready.apiKey ?? '' },
  };
  await probe(noLogs, false);
  await askIngest(gantry.child, 'discard');
  const logsWarmup = Math.min(500, settings.warmup_requests);
  log(`request logs on and off, 1 connection each, interleaved: ${logsWarmup} warm-up + ${settings.requests} requests per target`);
  const loggingLatency = keep(
    'loggingLatency',
    await interleaved([targets.mock_direct, targets.gantry, noLogs], CHAT_BODY, logsWarmup, settings.requests, (x) => x.totalNs),
  );
  log(`request logs on and off, ${settings.connections} connections (${settings.seconds} s each)`);
  const logsOnThroughput = keep('logsOnThroughput', await withCpu(targets.gantry, { gantry: gPids.gantry, mock: mockPid }));
  const noLogsThroughput = keep('noLogsThroughput', await withCpu(noLogs, { gantry_no_logs: gantryNoLogs.child.proc.pid, mock: mockPid }));

  log(`gateway Lambda handler in a process of its own: ${settings.lambda_requests} warm invocations`);
  const lambda = keep('lambda', await benchLambda(await lambdaChild, settings.lambda_requests));

  await stopAll();
  const busyAfter = await cpuBusy(1_000);

  const mockLat = latency.mock_direct as Stats;
  const gwLat = latency.gantry as Stats;
  const pkLat = latency.portkey as Stats;
  const gwAdded = diff(gwLat, mockLat);
  const rps = (name: string) => throughput[name]?.rps ?? NaN;
  const ratio = round(rps('gantry') / rps('portkey'), 2);
  const vsBareProxy = round(rps('gantry') / rps('bare_proxy'), 2);
  const firstChunkAdded = round((firstChunk.gantry?.p50 ?? NaN) - (firstChunk.mock_direct?.p50 ?? NaN));
  const bareAdded = diff(latency.bare_proxy as Stats, mockLat);
  const policyAdded = diff(limitsLatency.gantry_rate_limited as Stats, limitsLatency.gantry as Stats);
  const cpuOf = (run: CpuThroughput | undefined, name: string) => run?.cpu_us_per_request[name] ?? NaN;
  const gantryCpu = cpuOf(throughput.gantry, 'gantry');
  const bareCpu = cpuOf(throughput.bare_proxy, 'bare_proxy');

  const report = {
    machine: {
      cores: os.availableParallelism(),
      cpu: os.cpus()[0]?.model ?? 'unknown',
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      /** CPU busy (all cores) for 1 s before the bench and after its servers stopped: other work sharing the cores. */
      other_cpu_busy: { before: round(busyBefore, 2), after: round(busyAfter, 2) },
      note:
        'Load generator, mock provider, Gantry and Portkey are separate processes sharing these cores ' +
        '(DynamoDB Local idles beside them: warm keys are served from the key cache).',
    },
    settings,
    conditions: {
      gantry:
        'local server, direct mode, DynamoDB Local in memory, auth on (workspace key, cache warm), request logs on (log-ingest worker in a ' +
        'child process, logs queue spooled to a temporary data directory), LOG_LEVEL=INFO (stdout to /dev/null)',
      rate_limit_policy:
        'latency_1conn and throughput use a key no policy matches; rate_limit_policy measures a key one requests-per-minute policy ' +
        'counts (one conditional UpdateItem to DynamoDB Local per request, before the provider call)',
      portkey:
        'node build/start-server.js --headless, NODE_ENV=production; streams only work with test/bench/portkey-stream-shim.ts ' +
        'preloaded (an @hono/node-server 1.19 incompatibility), and Portkey itself waits 25 ms before its first streamed chunk',
      mock_direct: 'the 32-connection figure for the mock is bounded by the load generator sharing the cores',
      bare_proxy:
        'test/bench/bare-proxy.ts: a node:http server piping each request and answer to and from the mock through one keep-alive ' +
        'agent, with no auth, parsing or logs: the ceiling for a Node gateway on this machine',
    },
    latency_1conn: {
      mock_direct: latency.mock_direct,
      bare_proxy: latency.bare_proxy,
      gantry: latency.gantry,
      portkey: latency.portkey,
      added_ms: { bare_proxy: diff(latency.bare_proxy as Stats, mockLat), gantry: gwAdded, portkey: diff(pkLat, mockLat) },
    },
    routing: {
      engine_in_process: engine,
      fallback_first_target_down: routingLatency.gantry_fallback,
      cache_hit: routingLatency.gantry_cache_hit,
      single_target: routingLatency.gantry,
      mock_direct: routingLatency.mock_direct,
      added_ms: {
        fallback_vs_single: diff(routingLatency.gantry_fallback as Stats, routingLatency.gantry as Stats),
        cache_hit_vs_mock: diff(routingLatency.gantry_cache_hit as Stats, routingLatency.mock_direct as Stats),
      },
      note: 'fallback_vs_single includes the refused connection to the first target; engine_in_process is the engine alone',
    },
    cpu_us_per_request_32conn: {
      bare_proxy: throughput.bare_proxy?.cpu_us_per_request ?? null,
      gantry: throughput.gantry?.cpu_us_per_request ?? null,
      portkey: throughput.portkey?.cpu_us_per_request ?? null,
      mock_direct: throughput.mock_direct?.cpu_us_per_request ?? null,
      gantry_logs_on_worker_dropping: logsOnThroughput.cpu_us_per_request,
      gantry_logs_off: noLogsThroughput.cpu_us_per_request,
      gantry_vs_bare_proxy: round(gantryCpu / bareCpu, 2),
      logging: logging,
      note:
        'utime + stime of /proc/<pid>/stat of each process before and after the measured part of its 32-connection run (warm-up ' +
        'excluded), over the requests it completed. gantry: the main run, logs on, the log-ingest worker writing to DynamoDB Local ' +
        '(log_ingest: the worker child process; dynamodb_local: the JVM, grandchild of the bench Gantry). logging: the worker and ' +
        "the JVM per log written in that run, and the worker's DynamoDB items written per log (rollups and pointers included; " +
        'write units count updates at 1: their item size is not known there, see lambda.handler.log_ingest for units).',
    },
    rate_limit_policy: {
      mock_direct: limitsLatency.mock_direct,
      no_policy: limitsLatency.gantry,
      one_policy: limitsLatency.gantry_rate_limited,
      added_ms: {
        policy_vs_no_policy: diff(limitsLatency.gantry_rate_limited as Stats, limitsLatency.gantry as Stats),
        with_policy_vs_mock: diff(limitsLatency.gantry_rate_limited as Stats, limitsLatency.mock_direct as Stats),
      },
      counter_calls_per_request: round(counterCalls, 3),
    },
    dynamodb_calls_per_warm_request: {
      ...dynamodb,
      note:
        'Counted, not estimated: every DynamoDB HTTP request of the Gantry process (a middleware on its document client, retries ' +
        'included) in a window of sequential warm requests of one key, by origin: sync = made for a request before its answer ended ' +
        '(the caller waited for it), after_answer = for a request after its answer ended, log_ingest = the log-ingest worker ' +
        'in the serving process (0: it runs in a process of its own, as a function of its own in AWS; its writes are in request_logs.ingest_local), ' +
        'other = timers and the rest. one_approximate_rate_limit_policy: the policy in approximate mode with leases of 100 ' +
        '(docs/limits.md), one lease UpdateItem per 100 requests.',
    },
    request_logs: {
      latency_1conn: {
        mock_direct: loggingLatency.mock_direct,
        logs_on: loggingLatency.gantry,
        logs_off: loggingLatency.gantry_no_logs,
        added_ms: diff(loggingLatency.gantry as Stats, loggingLatency.gantry_no_logs as Stats),
      },
      throughput_32conn: {
        logs_on: logsOnThroughput,
        logs_off: noLogsThroughput,
        ratio: round(logsOnThroughput.rps / noLogsThroughput.rps, 3),
        logs_on_vs_bare_proxy: round(logsOnThroughput.rps / rps('bare_proxy'), 2),
        logs_off_vs_bare_proxy: round(noLogsThroughput.rps / rps('bare_proxy'), 2),
      },
      throughput_32conn_with_local_worker: { logs_on: throughput.gantry, logs_off: noLogsThroughput },
      ingest_local: {
        events_written: ingest.total,
        worker_busy_s: round(ingest.busyMs / 1000, 1),
        events_per_s: ingest.busyMs > 0 ? round((ingest.total / ingest.busyMs) * 1000, 0) : null,
        backlog_left_after_load: ingest.written,
        backlog_drain_ms: ingest.ms,
        backlog_drained: ingest.drained,
      },
      note:
        'latency_1conn and throughput_32conn: the logging Gantry builds and queues every event, its worker drops them (in ' +
        'AWS the worker is a function of its own fed by SQS); throughput_32conn_with_local_worker: the main throughput run, the worker ' +
        'writing to DynamoDB Local from a child process of its own (as npm start runs it) on the same cores. ingest_local: events the ' +
        'worker wrote (logs, pointers, rollups) over the time it was busy writing, and the backlog left when the load ended (the queue ' +
        'holds at most GW_QUEUE_MAX_IN_MEMORY of it in memory, the rest in its spool).',
    },
    throughput_32conn: {
      mock_direct: throughput.mock_direct,
      bare_proxy: throughput.bare_proxy,
      gantry: throughput.gantry,
      portkey: throughput.portkey,
      gantry_vs_portkey: ratio,
      gantry_vs_bare_proxy: vsBareProxy,
    },
    stream_first_chunk: {
      mock_direct: firstChunk.mock_direct,
      bare_proxy: firstChunk.bare_proxy,
      gantry: firstChunk.gantry,
      portkey: firstChunk.portkey,
      added_p50_ms: {
        bare_proxy: round((firstChunk.bare_proxy?.p50 ?? NaN) - (firstChunk.mock_direct?.p50 ?? NaN)),
        gantry: firstChunkAdded,
        portkey: round((firstChunk.portkey?.p50 ?? NaN) - (firstChunk.mock_direct?.p50 ?? NaN)),
      },
    },
    guardrails,
    prompts,
    prompt_render: promptRender,
    memory: {
      gantry_private_mb: {
        idle: idleMemory?.private ?? null,
        peak_under_load: memory.peak_under_load.private,
        after_load: memory.after_load?.private ?? null,
        after_load_then_idle: afterIdleMemory?.private ?? null,
      },
      gantry_rss_mb: {
        idle: idleMemory?.rss ?? idle.rssMb,
        peak_under_load: memory.peak_under_load.rss,
        after_load: memory.after_load?.rss ?? afterLoad.rssMb,
        after_load_then_idle: afterIdleMemory?.rss ?? afterIdle.rssMb,
      },
      gantry_max_rss_lifetime_mb: afterLoad.maxRssMb,
      gantry_heap_after_load_mb: { used: afterLoad.heapUsedMb, total: afterLoad.heapTotalMb, external: afterLoad.externalMb },
      // Where the resident memory is: V8's young and old generations (capacity), Buffers, V8's malloc, and the process's own
      // pages (RSS also counts the node binary's, shared with every node process).
      gantry_breakdown_after_load_mb: {
        young_generation: afterLoad.newSpaceMb,
        old_generation: afterLoad.oldSpaceMb,
        array_buffers: afterLoad.arrayBuffersMb,
        malloced: afterLoad.mallocedMb,
        private: afterLoad.privateMb ?? null,
      },
      gantry_node_flags: gwNodeArgs,
      bare_proxy_rss_after_load_mb: bareProxyAfterLoad.rssMb,
      bare_proxy_private_after_load_mb: bareProxyAfterLoad.privateMb ?? null,
      note:
        'private = Private_Clean + Private_Dirty of /proc/<pid>/smaps_rollup, read from the bench process (RSS also counts the node ' +
        "binary's pages shared with every node process). idle: all servers up, before any load; peak_under_load: sampled every 250 ms " +
        'during the 32-connection run; after_load: as it ends; after_load_then_idle: after the stream and guardrail steps, once Gantry ' +
        'has served nothing for about 30 s (the prompts step)',
    },
    budgets: {
      gantry_cpu_per_request_vs_bare_proxy: budget(round(gantryCpu / bareCpu, 2), BUDGETS.gantry_cpu_per_request_vs_bare_proxy),
      logging_cpu_per_log_vs_gantry_cpu_per_request: budget(
        logging.cpu_us_per_log.total === null ? NaN : round(logging.cpu_us_per_log.total / gantryCpu, 2),
        BUDGETS.logging_cpu_per_log_vs_gantry_cpu_per_request,
      ),
      dynamodb_items_per_log: budget(logging.dynamodb_per_log?.items_written ?? NaN, BUDGETS.dynamodb_items_per_log),
      throughput_logs_on_vs_bare_proxy: budget(round(logsOnThroughput.rps / rps('bare_proxy'), 2), BUDGETS.throughput_logs_on_vs_bare_proxy, true),
      throughput_logs_off_vs_bare_proxy: budget(round(noLogsThroughput.rps / rps('bare_proxy'), 2), BUDGETS.throughput_logs_off_vs_bare_proxy, true),
      added_p50_vs_bare_proxy: budget(round(gwAdded.p50 / bareAdded.p50, 2), BUDGETS.added_p50_vs_bare_proxy),
      added_p99_vs_bare_proxy: budget(round(gwAdded.p99 / bareAdded.p99, 2), BUDGETS.added_p99_vs_bare_proxy),
      rate_limit_policy_added_p50_ms: budget(policyAdded.p50, BUDGETS.rate_limit_policy_added_p50_ms),
      first_chunk_after_bare_proxy_ms: budget(
        round((firstChunk.gantry?.p50 ?? NaN) - (firstChunk.bare_proxy?.p50 ?? NaN)),
        BUDGETS.first_chunk_after_bare_proxy_ms,
      ),
      private_mb_under_load: budget(memory.peak_under_load.private, BUDGETS.private_mb_under_load),
      private_mb_after_load_above_idle: budget(
        round((afterIdleMemory?.private ?? NaN) - (idleMemory?.private ?? NaN), 1),
        BUDGETS.private_mb_after_load_above_idle,
      ),
      lambda_cpu_ms_no_policy: budget(lambda.handler.no_policy.cpu_ms_per_request, BUDGETS.lambda_cpu_ms_no_policy),
      lambda_cpu_ms_one_policy: budget(lambda.handler.one_policy.cpu_ms_per_request, BUDGETS.lambda_cpu_ms_one_policy),
      lambda_cpu_ms_burst_max: budget(lambda.handler.cpu_ms_per_invocation_all.max, BUDGETS.lambda_cpu_ms_burst_max),
      gateway_bundle_kb: budget(gatewayBundle.eager_kb, BUDGETS.gateway_bundle_kb),
      gateway_cold_import_ms: budget(gatewayBundle.cold_import_ms.median, BUDGETS.gateway_cold_import_ms),
      before_hook_added_p50_ms: budget(guardrails.before_request_hook.added_p50_ms, BUDGETS.before_hook_added_p50_ms),
      stream_check_added_p99_ms: budget(guardrails.stream_output_check.added_p99_ms_beyond_window, BUDGETS.stream_check_added_p99_ms),
      routing_engine_us: budget(engine.execute_us, BUDGETS.routing_engine_us),
      prompt_pointer_stale_ms: budget(prompts.max_stale_after_move_ms, BUDGETS.prompt_pointer_stale_ms),
      prompt_render_p99_ms: budget(promptRender.p99_ms, BUDGETS.prompt_render_p99_ms),
    },
    gateway_bundle: {
      ...gatewayBundle,
      note: 'eager_kb is what a cold start loads (the entry and its static chunks); lazily imported chunks (native providers ...) are in total_kb only. The cold import includes loading the AWS SDK the runtime provides.',
    },
    lambda,
    duration_s: round((Date.now() - started) / 1000, 1),
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  // The budgets at a glance, beside the JSON.
  for (const [name, b] of Object.entries(report.budgets)) log(`budget ${b.pass ? 'held  ' : 'missed'} ${name}: ${b.measured} (limit ${b.limit})`);
}

/** A 32-connection run with the CPU each named process used during it, per request completed (µs). */
type CpuThroughput = ThroughputResult & { cpu_us_per_request: Record<string, number | null> };

async function withCpu(t: Target, pids: Record<string, number | undefined>, hooks: RunHooks = {}): Promise<CpuThroughput> {
  const w = cpuWindow(pids);
  let used: Record<string, number | null> = {};
  const r = await closedLoop(t, CHAT_BODY, settings.connections, settings.seconds, settings.warmup_seconds, {
    onStart: () => (w.start(), hooks.onStart?.()),
    onEnd: () => ((used = w.end()), hooks.onEnd?.()),
  });
  const per = Object.fromEntries(Object.entries(used).map(([name, us]) => [name, us === null || r.requests === 0 ? null : round(us / r.requests, 1)]));
  return { ...r, cpu_us_per_request: per };
}

/** The bench Gantry's pids: its own, its DynamoDB Local JVM's and its log-ingest worker's (found below it in /proc if it does not say). */
async function gantryPids(child: Child): Promise<PidsMessage> {
  const said = await ask(child, { type: 'pids' });
  const below = descendants(said.gantry);
  return {
    ...said,
    ingest: said.ingest ?? below.find((pid) => commandLine(pid).includes('log-ingest')),
    dynamodb: said.dynamodb ?? below.find((pid) => commandLine(pid).startsWith('java')),
  };
}

/** The log-ingest worker's DynamoDB requests so far (as of its last batch). */
const askIngestCounts = (child: Child): Promise<IngestCountsMessage> => ask(child, { type: 'ingest_counts' }, 5_000);

/**
 * What logging cost beside the request path during the main 32-connection run (the worker writing to
 * DynamoDB Local from its own process): the worker's and the JVM's CPU per log they wrote in the run
 * (a worker that falls behind writes fewer logs than requests were served), and the items written per log.
 */
function loggingFigures(run: CpuThroughput | undefined, counts: [IngestCountsMessage, IngestCountsMessage] | undefined) {
  const [a, b] = [counts?.[0].counts, counts?.[1].counts];
  const logs = a && b ? b.logsWritten - a.logsWritten : 0;
  const cpu = run?.cpu_us_per_request ?? {};
  const perLog = (name: string) => (cpu[name] == null || logs <= 0 || !run ? null : round(((cpu[name] as number) * run.requests) / logs, 1));
  const worker = perLog('log_ingest');
  const database = perLog('dynamodb_local');
  return {
    requests: run?.requests ?? 0,
    logs_written: logs,
    cpu_us_per_log: { log_ingest: worker, dynamodb_local: database, total: worker === null || database === null ? null : round(worker + database, 1) },
    dynamodb_per_log:
      a && b && logs > 0
        ? {
            items_written: round((b.writes - a.writes) / logs, 3),
            write_units_updates_at_1: round((b.writeUnits - a.writeUnits) / logs, 3),
            items_read: round((b.reads - a.reads) / logs, 3),
            batches: b.batches - a.batches,
          }
        : null,
  };
}

/** Lets the bench Gantry's log-ingest worker drain its backlog (and says how fast), or makes it drop events. */
const askIngest = (child: Child, action: 'discard' | 'drain'): Promise<IngestMessage> => ask(child, { type: 'ingest', action }, 90_000);

/** Asks the bench Gantry how many limit counter calls it has made. */
const askLimits = (child: Child): Promise<LimitsMessage> => ask(child, { type: 'limits' });

const hardLimit = setTimeout(() => {
  log(`gave up after ${HARD_LIMIT_MS / 1000} s (BENCH_LIMIT_S sets the limit); the figures measured so far follow`);
  process.stdout.write(`${JSON.stringify({ incomplete: true, limit_s: HARD_LIMIT_MS / 1000, ...partial }, null, 2)}\n`);
  void stopAll().finally(() => process.exit(2));
}, HARD_LIMIT_MS);
hardLimit.unref();

let interrupted = false;
const stopSignal = () => {
  interrupted = true;
  log('interrupted: stopping the servers');
  void stopAll().finally(() => process.exit(130));
};
process.once('SIGINT', stopSignal);
process.once('SIGTERM', stopSignal);

try {
  await main();
  await stopAll();
} catch (err) {
  // Stopping the servers on Ctrl-C fails the requests in flight: that is not a finding.
  if (!interrupted) log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  await stopAll();
  process.exit(1);
}
