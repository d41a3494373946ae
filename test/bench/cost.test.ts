import { describe, expect, it } from 'vitest';
import {
  ACCESS_LOG_BYTES,
  addedLatencyMs,
  costRows,
  costTable,
  gatewayDurationMs,
  latencyAtMemories,
  MARKERS,
  PRICES_USD,
  replaceBetweenMarkers,
  sqsRequestsPerMessage,
  type CostFigures,
} from './cost.ts';

const key = (cpu: number, limitUnits: number) => ({
  cpu_ms_per_request: cpu,
  dynamodb_per_request: { write_units: limitUnits, read_units: 0 },
  stdout_per_request: { lines: 2, bytes: 1_800 },
  response_bytes: 400,
});

const figures: CostFigures = {
  gateway_memory_mb: 256,
  ingest_memory_mb: 512,
  no_policy: key(1, 0),
  one_policy: key(1.5, 1),
  request_bytes: 100,
  sqs: { requests_per_invocation: 1, bytes_per_message: 2_048 },
  log_ingest: { batch_size: 100, cpu_ms_per_log: 0.2, write_units_per_log: 4, read_units_per_log: 0.5 },
};

describe('the cost of a gateway request in AWS', () => {
  it('stretches CPU time by the share of a vCPU the memory buys, one vCPU at 1,769 MB', () => {
    expect(addedLatencyMs(1, 1769)).toBe(1);
    expect(addedLatencyMs(1, 3008)).toBe(1);
    expect(addedLatencyMs(2, 256)).toBeCloseTo(13.82, 2);
    expect(latencyAtMemories(1)).toEqual({ '128_mb': 13.82, '256_mb': 6.91, '512_mb': 3.46 });
  });

  it("bills the gateway's wall time: its CPU stretched, its AWS round trips and the wait for the model, rounded up to the millisecond", () => {
    const none = gatewayDurationMs(figures, 'no_policy', 0);
    expect(none.cpu).toBeCloseTo(6.91, 2);
    expect(none.billed).toBe(Math.ceil(none.cpu + none.roundTrips));
    // The limit counter's round trip is waited for only with a policy.
    expect(gatewayDurationMs(figures, 'one_policy', 0).roundTrips).toBeGreaterThan(none.roundTrips);
    expect(gatewayDurationMs(figures, 'no_policy', 2).billed - none.billed).toBe(2_000);
  });

  it('prices every billed item of a request and totals them at each wait for the model', () => {
    const { rows, totals } = costRows(figures);
    const items = rows.map((r) => r.item).join('\n');
    for (const billed of [
      'API Gateway REST',
      'gateway function requests',
      'gateway duration',
      'SQS',
      'log-ingest function',
      'DynamoDB, request logs',
      'limit counter',
      'CloudWatch Logs',
      'X-Ray',
      'data transfer out',
    ]) {
      expect(items).toContain(billed);
    }
    const sum = (i: 0 | 1) => rows.filter((r) => r.inTotal).reduce((s, r) => s + r.usd[i], 0);
    expect(totals.map((t) => t.waitS)).toEqual([0, 2, 10]);
    expect(totals[0]?.usd[0]).toBeCloseTo(sum(0), 10);
    // 2 s at 256 MB: 0.5 GB-s a request.
    expect((totals[1]?.usd[0] ?? 0) - (totals[0]?.usd[0] ?? 0)).toBeCloseTo(0.5 * 1e6 * PRICES_USD.lambda_arm64_per_gb_second, 6);
    // The policy's write unit is the difference between the columns' DynamoDB rows.
    const limit = rows.find((r) => r.item.startsWith('DynamoDB, the gateway'));
    expect((limit?.usd[1] ?? 0) - (limit?.usd[0] ?? 0)).toBeCloseTo(PRICES_USD.dynamodb_per_million_write_units, 10);
    const logs = rows.find((r) => r.item.startsWith('DynamoDB, request logs'));
    expect(logs?.usd[0]).toBeCloseTo(4 * 0.625 + 0.5 * 0.125, 10);
  });

  it('counts SQS requests per 64 KB chunk, a receive or delete of ten messages as one', () => {
    expect(sqsRequestsPerMessage(2_048, 1)).toBe(1);
    expect(sqsRequestsPerMessage(70 * 1024, 1)).toBe(2);
    expect(sqsRequestsPerMessage(2_048, 10)).toBe(0.1);
    expect(sqsRequestsPerMessage(10 * 1024, 10)).toBe(0.2);
  });

  it('counts the access log line and the measured stdout lines in CloudWatch Logs', () => {
    const cw = costRows(figures).rows.find((r) => r.item.startsWith('CloudWatch'));
    const more = costRows({ ...figures, no_policy: { ...figures.no_policy, stdout_per_request: { lines: 2, bytes: 2_800 } } }).rows.find((r) =>
      r.item.startsWith('CloudWatch'),
    );
    expect(ACCESS_LOG_BYTES).toBeGreaterThan(300);
    expect((more?.usd[0] ?? 0) - (cw?.usd[0] ?? 0)).toBeCloseTo((1_000 / 1e9) * 1e6 * PRICES_USD.cloudwatch_logs_per_gb_ingested, 10);
  });

  it('renders one Markdown table with both columns and a total per wait', () => {
    const table = costTable(figures, 'a test');
    expect(table).toContain('| per million requests | no policy | one exact rate-limit policy |');
    expect(table.match(/\*\*total, model answering in \d+ s\*\*/g)).toHaveLength(3);
    expect(table).toContain(PRICES_USD.date);
  });
});

describe('the table between the markers', () => {
  const doc = `# Title\n\n${MARKERS.begin}\nold table\n${MARKERS.end}\n\nafter\n`;

  it('replaces what lies between the markers and nothing else, the same way twice', () => {
    const once = replaceBetweenMarkers(doc, 'new table');
    expect(once).toBe(`# Title\n\n${MARKERS.begin}\nnew table\n${MARKERS.end}\n\nafter\n`);
    expect(replaceBetweenMarkers(once, 'new table')).toBe(once);
  });

  it('refuses a file without the markers, or with them twice', () => {
    expect(() => replaceBetweenMarkers('# Title\n', 'x')).toThrow(/markers/);
    expect(() => replaceBetweenMarkers(`${doc}${doc}`, 'x')).toThrow(/once each/);
  });
});
