/**
 * The gateway Lambda's cost per million requests, from the bench's own figures (lambda-handler.ts)
 * and public on-demand prices, us-east-1, as published on 2026-11-24 (AWS pricing pages: Lambda,
 * API Gateway, DynamoDB; DynamoDB's after its November 2024 cut). Billed duration is taken as the
 * handler's CPU time per warm request: what Gantry adds; the wait for the model is billed too, at
 * the same rate per second, and depends on the model, not on Gantry.
 */
import { ask, startNodeChild, type Child } from './children.ts';
import type { LambdaMessage } from './protocol.ts';
import { round } from './load.ts';
import { DEFAULT_MEMORY_MB } from '../../infra/settings.ts';

export const PRICES_USD = {
  region: 'us-east-1',
  date: '2026-11-24',
  lambda_arm64_per_gb_second: 0.0000133334,
  lambda_per_million_requests: 0.2,
  api_gateway_rest_per_million_requests: 3.5,
  dynamodb_on_demand_per_million_write_units: 0.625,
};

export interface LambdaCost {
  handler: Omit<LambdaMessage, 'type'>;
  gateway_memory_mb: number;
  per_million_requests_usd: {
    lambda_requests: number;
    lambda_duration_gantry_cpu: number;
    lambda_duration_per_100ms_model_wait: number;
    api_gateway_rest: number;
    dynamodb_limit_writes: number;
    dynamodb_log_writes: number;
    total_without_model_wait: number;
  };
  prices: typeof PRICES_USD;
  note: string;
}

/** Starts the handler's own process against the mock (early: its DynamoDB Local takes a while to start). */
export const startLambda = (mockUrl: string): Promise<Child> =>
  startNodeChild('lambda_handler', 'lambda-handler.ts', { BENCH_MOCK_URL: mockUrl }, 90_000).then((c) => c.child);

/** Runs `n` warm invocations in the handler's process, stops it, and prices them. */
export async function benchLambda(child: Child, n: number): Promise<LambdaCost> {
  let figures: LambdaMessage;
  try {
    figures = await ask(child, { type: 'lambda', requests: n }, 120_000);
  } finally {
    await child.stop();
  }
  const { type: _type, ...handler } = figures;
  if (handler.statuses.length !== 1 || handler.statuses[0] !== 200) throw new Error(`lambda handler answered ${handler.statuses.join(', ')}`);
  const gb = DEFAULT_MEMORY_MB.gateway / 1024;
  const perMillion = (x: number) => round(x * 1_000_000, 4);
  const p = PRICES_USD;
  const costs = {
    lambda_requests: p.lambda_per_million_requests,
    lambda_duration_gantry_cpu: perMillion((handler.cpu_ms_per_request / 1000) * gb * p.lambda_arm64_per_gb_second),
    lambda_duration_per_100ms_model_wait: perMillion(0.1 * gb * p.lambda_arm64_per_gb_second),
    api_gateway_rest: p.api_gateway_rest_per_million_requests,
    dynamodb_limit_writes: round(handler.gateway_writes_per_request.units * p.dynamodb_on_demand_per_million_write_units, 4),
    dynamodb_log_writes: round(handler.log_ingest_writes_per_request.units * p.dynamodb_on_demand_per_million_write_units, 4),
  };
  const total = costs.lambda_requests + costs.lambda_duration_gantry_cpu + costs.api_gateway_rest + costs.dynamodb_limit_writes + costs.dynamodb_log_writes;
  return {
    handler,
    gateway_memory_mb: DEFAULT_MEMORY_MB.gateway,
    per_million_requests_usd: { ...costs, total_without_model_wait: round(total, 4) },
    prices: PRICES_USD,
    note:
      'The real gateway Lambda handler in a process of its own (API Gateway REST events in, response stream out) against the mock, ' +
      'a workspace key, request logs on and one exact rate limits policy; cpu_ms_per_request = process.cpuUsage() over the warm ' +
      'invocations / n (this machine, x86, shared cores: Graviton differs). Write units estimated from item sizes (1 KB each); the ' +
      "log writes are the log-ingest function's (SQS and its invocations not priced). Duration is billed on wall time, which also " +
      'holds the wait for the model: priced apart per 100 ms.',
  };
}
