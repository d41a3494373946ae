/**
 * The cost per million gateway requests in AWS, from the bench's Lambda figures (lambda-handler.ts)
 * and public on-demand prices: pure functions from figures to rows, and the one table README.md and
 * docs/deploy.md both show (test/bench/cost-table.ts writes it between their markers).
 *
 * Every billed item of a gateway request: API Gateway REST; the gateway function's requests and its
 * duration, which Lambda bills on wall time at the configured memory (Gantry's CPU stretched by the
 * share of a vCPU that memory buys, the AWS round trips it waits for, and the wait for the model);
 * SQS (the gateway's send, the event source's receive and delete); the log-ingest function; DynamoDB
 * (log writes and reads, the limit counter); CloudWatch Logs (the access log line, the functions'
 * platform lines, the EMF metric lines the gateway writes); X-Ray (tracing is on in infra/); and
 * data transfer out.
 */

/** Public on-demand prices, us-east-1, as the AWS pricing pages listed them on `date` (first tiers; free tiers ignored). */
export const PRICES_USD = {
  region: 'us-east-1',
  date: '2026-11-24',
  api_gateway_rest_per_million: 3.5,
  lambda_per_million_requests: 0.2,
  lambda_arm64_per_gb_second: 0.0000133334,
  sqs_standard_per_million_requests: 0.4,
  dynamodb_per_million_write_units: 0.625,
  dynamodb_per_million_read_units: 0.125,
  cloudwatch_logs_per_gb_ingested: 0.5,
  xray_per_million_traces_recorded: 5,
  data_transfer_out_per_gb: 0.09,
};

/** Lambda gives a function one vCPU at 1,769 MB, proportionally less below. */
export const MB_PER_VCPU = 1769;
/** SQS bills each 64 KB chunk of a request's payload as one request; a receive or delete takes at most 10 messages. */
const SQS_CHUNK_BYTES = 64 * 1024;
const SQS_MAX_BATCH = 10;
/** CloudWatch Logs bills 26 bytes of metadata per log event besides its bytes. */
const CLOUDWATCH_EVENT_OVERHEAD_BYTES = 26;

/**
 * What the bench cannot measure on this machine, stated (each row that uses one says so):
 * in-region round trips the gateway function waits for, the log-ingest function's wait on DynamoDB
 * per batch, and X-Ray's default sampling (the first request each second, then 5%).
 */
export const ASSUMPTIONS = {
  sqs_send_ms: 6,
  dynamodb_update_ms: 4,
  ingest_dynamodb_wait_ms_per_batch: 60,
  xray_sampled_share: 0.05,
};

/** Lines the bench cannot see, at their typical size (examples of the formats infra/ configures). */
const ACCESS_LOG_LINE =
  '{"requestId":"c6af9ac6-7b61-11e6-9a41-93e8deadbeef","ip":"203.0.113.10","userAgent":"OpenAI/Python 1.54.0",' +
  '"requestTime":"1795000000000","method":"POST","path":"/v1/chat/completions","status":"200","responseLength":"412",' +
  '"responseLatency":"850","integrationLatency":"845","integrationStatus":"200","integrationError":"-","error":"-",' +
  '"xrayTraceId":"1-6748a1b2-0123456789abcdef01234567"}';
const TRACING =
  '"tracing":{"spanId":"1a2b3c4d5e6f7a8b","type":"X-Amzn-Trace-Id","value":"Root=1-6748a1b2-0123456789abcdef01234567;Parent=1a2b3c4d5e6f7a8b;Sampled=0"}';
const PLATFORM_LINES = [
  `{"time":"2026-11-28T15:32:29.123Z","type":"platform.start","record":{"requestId":"6f1c1f0a-8f3e-4b7e-9a8e-1c2d3e4f5a6b","version":"$LATEST",${TRACING}}}`,
  `{"time":"2026-11-28T15:32:29.135Z","type":"platform.report","record":{"requestId":"6f1c1f0a-8f3e-4b7e-9a8e-1c2d3e4f5a6b","metrics":{"durationMs":12.34,"billedDurationMs":13,"memorySizeMB":256,"maxMemoryUsedMB":110},${TRACING},"status":"success"}}`,
];
const logBytes = (lines: readonly string[]): number => lines.reduce((s, l) => s + Buffer.byteLength(l) + CLOUDWATCH_EVENT_OVERHEAD_BYTES, 0);
export const ACCESS_LOG_BYTES = logBytes([ACCESS_LOG_LINE]);
export const PLATFORM_BYTES_PER_INVOCATION = logBytes(PLATFORM_LINES);

/** One key's figures from the bench (lambda.handler.no_policy / one_policy). */
export interface KeyCostFigures {
  cpu_ms_per_request: number;
  dynamodb_per_request: { write_units: number; read_units: number };
  stdout_per_request: { lines: number; bytes: number };
  response_bytes: number;
}

/** The bench's figures the table is made of (the `lambda` section of its JSON). */
export interface CostFigures {
  gateway_memory_mb: number;
  ingest_memory_mb: number;
  no_policy: KeyCostFigures;
  one_policy: KeyCostFigures;
  request_bytes: number;
  sqs: { requests_per_invocation: number; bytes_per_message: number };
  log_ingest: { batch_size: number; cpu_ms_per_log: number; write_units_per_log: number; read_units_per_log: number };
}

export const MODEL_WAITS_S = [0, 2, 10] as const;

/** Milliseconds of wall time `cpuMs` of CPU takes at `memoryMb` (1 vCPU at 1,769 MB, proportionally less below). */
export const addedLatencyMs = (cpuMs: number, memoryMb: number): number => (cpuMs * Math.max(MB_PER_VCPU, memoryMb)) / memoryMb;

/** SQS requests per message for a request carrying `perRequest` messages of `bytes` each. */
export const sqsRequestsPerMessage = (bytes: number, perRequest: number): number =>
  Math.ceil((Math.max(1, perRequest) * Math.max(1, bytes)) / SQS_CHUNK_BYTES) / Math.max(1, perRequest);

const perMillion = (units: number, pricePerMillion: number): number => units * pricePerMillion;
const gbSecondsPerMillion = (ms: number, memoryMb: number): number => (ms / 1000) * (memoryMb / 1024) * 1e6;

/** The gateway's billed duration per request (Lambda rounds each invocation up to the millisecond). */
export function gatewayDurationMs(f: CostFigures, key: 'no_policy' | 'one_policy', modelWaitS: number): { cpu: number; roundTrips: number; billed: number } {
  const cpu = addedLatencyMs(f[key].cpu_ms_per_request, f.gateway_memory_mb);
  const roundTrips = ASSUMPTIONS.sqs_send_ms * f.sqs.requests_per_invocation + (key === 'one_policy' ? ASSUMPTIONS.dynamodb_update_ms : 0);
  return { cpu, roundTrips, billed: Math.ceil(cpu + roundTrips + modelWaitS * 1000) };
}

export interface CostRow {
  item: string;
  /** USD per million requests: without a policy, with one exact rate-limit policy. */
  usd: [number, number];
  /** Part of the totals (false: the duration rows of other model waits, shown for reference). */
  inTotal: boolean;
}

const keys = ['no_policy', 'one_policy'] as const;
const both = (fn: (k: (typeof keys)[number]) => number): [number, number] => [fn('no_policy'), fn('one_policy')];

/** The rows of the table at each model wait, and the totals at each. */
export function costRows(f: CostFigures): { rows: CostRow[]; totals: { waitS: number; usd: [number, number] }[] } {
  const p = PRICES_USD;
  const gbs = p.lambda_arm64_per_gb_second;
  const msg = f.sqs.bytes_per_message;
  const batch = f.log_ingest.batch_size;
  const d0 = both((k) => gatewayDurationMs(f, k, 0).billed);
  const sqsPerLog = f.sqs.requests_per_invocation * sqsRequestsPerMessage(msg, 1) + 2 * sqsRequestsPerMessage(msg, Math.min(SQS_MAX_BATCH, batch));
  const ingestMs = addedLatencyMs(f.log_ingest.cpu_ms_per_log * batch, f.ingest_memory_mb) + ASSUMPTIONS.ingest_dynamodb_wait_ms_per_batch;
  const ingestInvocationsPerLog = 1 / batch;
  const cloudwatchBytes = both(
    (k) =>
      ACCESS_LOG_BYTES +
      PLATFORM_BYTES_PER_INVOCATION +
      f[k].stdout_per_request.bytes +
      f[k].stdout_per_request.lines * CLOUDWATCH_EVENT_OVERHEAD_BYTES +
      PLATFORM_BYTES_PER_INVOCATION * ingestInvocationsPerLog,
  );
  const rows: CostRow[] = [
    { item: 'API Gateway REST requests', usd: [p.api_gateway_rest_per_million, p.api_gateway_rest_per_million], inTotal: true },
    { item: 'gateway function requests', usd: [p.lambda_per_million_requests, p.lambda_per_million_requests], inTotal: true },
    {
      item: `gateway duration, Gantry's own (${fmt(f.no_policy.cpu_ms_per_request)} / ${fmt(f.one_policy.cpu_ms_per_request)} ms CPU = ${fmt(gatewayDurationMs(f, 'no_policy', 0).cpu)} / ${fmt(gatewayDurationMs(f, 'one_policy', 0).cpu)} ms at ${f.gateway_memory_mb} MB) and its AWS round trips (assumed: SQS send ${ASSUMPTIONS.sqs_send_ms} ms, limit counter ${ASSUMPTIONS.dynamodb_update_ms} ms), billed ${d0[0]} / ${d0[1]} ms`,
      usd: both((k) => gbSecondsPerMillion(gatewayDurationMs(f, k, 0).billed, f.gateway_memory_mb) * gbs),
      inTotal: true,
    },
    ...MODEL_WAITS_S.filter((w) => w > 0).map(
      (w): CostRow => ({
        item: `gateway duration while the model answers, ${w} s (${f.gateway_memory_mb} MB billed on wall time)`,
        usd: both((k) => gbSecondsPerMillion(gatewayDurationMs(f, k, w).billed - gatewayDurationMs(f, k, 0).billed, f.gateway_memory_mb) * gbs),
        inTotal: false,
      }),
    ),
    {
      item: `SQS, logs queue: the gateway's send and the event source's receive and delete (${fmt(sqsPerLog)} requests per log, ${fmt(msg / 1024, 1)} KB a message)`,
      usd: both(() => perMillion(sqsPerLog, p.sqs_standard_per_million_requests)),
      inTotal: true,
    },
    {
      item: `log-ingest function: requests (batches of ${batch}) and duration (${fmt(f.log_ingest.cpu_ms_per_log)} ms CPU per log at ${f.ingest_memory_mb} MB, plus ${ASSUMPTIONS.ingest_dynamodb_wait_ms_per_batch} ms assumed waiting on DynamoDB per batch)`,
      usd: both(
        () =>
          perMillion(ingestInvocationsPerLog, p.lambda_per_million_requests) +
          gbSecondsPerMillion(Math.ceil(ingestMs) * ingestInvocationsPerLog, f.ingest_memory_mb) * gbs,
      ),
      inTotal: true,
    },
    {
      item: `DynamoDB, request logs (${fmt(f.log_ingest.write_units_per_log)} write units and ${fmt(f.log_ingest.read_units_per_log)} read units per log, rollups included)`,
      usd: both(
        () =>
          perMillion(f.log_ingest.write_units_per_log, p.dynamodb_per_million_write_units) +
          perMillion(f.log_ingest.read_units_per_log, p.dynamodb_per_million_read_units),
      ),
      inTotal: true,
    },
    {
      item: `DynamoDB, the gateway (limit counter: ${fmt(f.no_policy.dynamodb_per_request.write_units)} / ${fmt(f.one_policy.dynamodb_per_request.write_units)} write units per request; reads ${fmt(f.no_policy.dynamodb_per_request.read_units)} / ${fmt(f.one_policy.dynamodb_per_request.read_units)} units)`,
      usd: both(
        (k) =>
          perMillion(f[k].dynamodb_per_request.write_units, p.dynamodb_per_million_write_units) +
          perMillion(f[k].dynamodb_per_request.read_units, p.dynamodb_per_million_read_units),
      ),
      inTotal: true,
    },
    {
      item: `CloudWatch Logs: access log line, functions' platform lines, EMF metrics (${fmt(f.no_policy.stdout_per_request.lines)} lines, ${f.no_policy.stdout_per_request.bytes} B measured), ${Math.round(cloudwatchBytes[0])} / ${Math.round(cloudwatchBytes[1])} B per request`,
      usd: both((k) => (cloudwatchBytes[k === 'no_policy' ? 0 : 1] / 1e9) * 1e6 * p.cloudwatch_logs_per_gb_ingested),
      inTotal: true,
    },
    {
      item: `X-Ray, API Gateway and Lambda tracing on: ${ASSUMPTIONS.xray_sampled_share * 100}% of requests sampled past the first each second ($${fmt(p.xray_per_million_traces_recorded, 2)} per million if every request is traced)`,
      usd: both(() => perMillion(ASSUMPTIONS.xray_sampled_share * (1 + ingestInvocationsPerLog), p.xray_per_million_traces_recorded)),
      inTotal: true,
    },
    {
      item: `data transfer out: the request to the provider and the answer to the client (${f.request_bytes} B + ${f.no_policy.response_bytes} B, the bench's chat)`,
      usd: both((k) => ((f.request_bytes + f[k].response_bytes) / 1e9) * 1e6 * p.data_transfer_out_per_gb),
      inTotal: true,
    },
  ];
  const base = both((k) => rows.filter((r) => r.inTotal).reduce((s, r) => s + r.usd[k === 'no_policy' ? 0 : 1], 0));
  const totals = MODEL_WAITS_S.map((waitS) => ({
    waitS,
    usd: both(
      (k) =>
        base[k === 'no_policy' ? 0 : 1] +
        gbSecondsPerMillion(gatewayDurationMs(f, k, waitS).billed - gatewayDurationMs(f, k, 0).billed, f.gateway_memory_mb) * gbs,
    ),
  }));
  return { rows, totals };
}

function fmt(v: number, digits = 2): string {
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
const usd = (v: number): string => `$${fmt(v)}`;
/** A unit price as published: to the cent at least, every digit of a smaller one. */
const price = (v: number): string => `$${v.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 10 })}`;

/** The added latency a warm request's CPU becomes at 128, 256 and 512 MB. */
export function latencyAtMemories(cpuMs: number, memories: readonly number[] = [128, 256, 512]): Record<string, number> {
  return Object.fromEntries(memories.map((m) => [`${m}_mb`, Math.round(addedLatencyMs(cpuMs, m) * 100) / 100]));
}

/** The table in Markdown, with the figures and prices it comes from. */
export function costTable(f: CostFigures, source: string): string {
  const { rows, totals } = costRows(f);
  const p = PRICES_USD;
  const lines = [
    `Generated by \`node test/bench/cost-table.ts\` from ${source}: the gateway Lambda handler's CPU per warm request on this machine (x86; Graviton differs), ` +
      `its DynamoDB, SQS and stdout traffic, and the log-ingest consumer's writes, priced at public on-demand prices in ${p.region} as of ${p.date}: ` +
      `API Gateway REST ${price(p.api_gateway_rest_per_million)} per million; Lambda arm64 ${price(p.lambda_arm64_per_gb_second)} per GB-second and ` +
      `${price(p.lambda_per_million_requests)} per million requests; SQS ${price(p.sqs_standard_per_million_requests)} per million requests (64 KB chunks); DynamoDB on-demand ` +
      `${price(p.dynamodb_per_million_write_units)} per million write units, ${price(p.dynamodb_per_million_read_units)} per million read units; CloudWatch Logs ` +
      `${price(p.cloudwatch_logs_per_gb_ingested)} per GB ingested; X-Ray ${price(p.xray_per_million_traces_recorded)} per million traces recorded; data transfer out ` +
      `${price(p.data_transfer_out_per_gb)} per GB. Gateway at ${f.gateway_memory_mb} MB, log-ingest function at ${f.ingest_memory_mb} MB (\`infra/settings.ts\`).`,
    '',
    '| per million requests | no policy | one exact rate-limit policy |',
    '|---|---|---|',
    ...rows.map((r) => `| ${r.inTotal ? r.item : `(${r.item})`} | ${usd(r.usd[0])} | ${usd(r.usd[1])} |`),
    ...totals.map((t) => `| **total, model answering in ${t.waitS} s** | **${usd(t.usd[0])}** | **${usd(t.usd[1])}** |`),
    '',
    `Lambda bills wall time: a function at ${f.gateway_memory_mb} MB waiting for the model costs ` +
      `${usd(gbSecondsPerMillion(1000, f.gateway_memory_mb) * p.lambda_arm64_per_gb_second)} per million requests per second of the wait. ` +
      'Rows in parentheses are included in the totals of their wait only. X-Ray at low traffic (below about one request per second) traces nearly every ' +
      `request: up to ${usd(p.xray_per_million_traces_recorded)} per million instead. Not per request, so not here: log storage, custom metrics ` +
      '(per metric-month), alarms, the dashboard, KMS and the secret, and the event sources\u2019 empty polls.',
  ];
  return lines.join('\n');
}

export const MARKERS = { begin: '<!-- cost-table:begin (generated by test/bench/cost-table.ts) -->', end: '<!-- cost-table:end -->' };

/** `text` with what lies between the markers replaced by `content`; throws when the markers are not there once each. */
export function replaceBetweenMarkers(text: string, content: string): string {
  const begin = text.indexOf(MARKERS.begin);
  const end = text.indexOf(MARKERS.end);
  if (begin < 0 || end < begin || text.indexOf(MARKERS.begin, begin + 1) >= 0 || text.indexOf(MARKERS.end, end + 1) >= 0) {
    throw new Error(`expected the markers ${MARKERS.begin} and ${MARKERS.end} once each, in that order`);
  }
  return `${text.slice(0, begin + MARKERS.begin.length)}\n${content}\n${text.slice(end)}`;
}
