/**
 * The gateway Lambda's figures (lambda-handler.ts, in a process of its own) and what they cost per
 * million requests in AWS (cost.ts): the added latency its CPU becomes at 128, 256 and 512 MB, and
 * the rows of the cost table README.md and docs/deploy.md show (test/bench/cost-table.ts).
 */
import { ask, startNodeChild, type Child } from './children.ts';
import type { LambdaMessage } from './protocol.ts';
import { DEFAULT_MEMORY_MB } from '../../infra/settings.ts';
import { costRows, latencyAtMemories, PRICES_USD, ASSUMPTIONS, type CostFigures } from './cost.ts';

export interface LambdaCost {
  handler: Omit<LambdaMessage, 'type'>;
  gateway_memory_mb: number;
  ingest_memory_mb: number;
  /** Added latency (ms) the warm CPU becomes at each memory size: cpu_ms × 1,769 / memory_mb. */
  added_latency_ms_at_memory: { no_policy: Record<string, number>; one_policy: Record<string, number>; burst_max: Record<string, number> };
  cost: ReturnType<typeof costRows> & { prices: typeof PRICES_USD; assumptions: typeof ASSUMPTIONS };
  note: string;
}

/** Starts the handler's own process against the mock (early: its DynamoDB Local takes a while to start). */
export const startLambda = (mockUrl: string): Promise<Child> =>
  startNodeChild('lambda_handler', 'lambda-handler.ts', { BENCH_MOCK_URL: mockUrl }, 90_000).then((c) => c.child);

/** The cost model's input from the handler's figures. */
export const costFigures = (h: Omit<LambdaMessage, 'type'>, gatewayMb: number, ingestMb: number): CostFigures => ({
  gateway_memory_mb: gatewayMb,
  ingest_memory_mb: ingestMb,
  no_policy: h.no_policy,
  one_policy: h.one_policy,
  request_bytes: h.request_bytes,
  sqs: h.sqs,
  log_ingest: h.log_ingest,
});

/** Runs `n` warm invocations per key in the handler's process, stops it, and prices them. */
export async function benchLambda(child: Child, n: number): Promise<LambdaCost> {
  let figures: LambdaMessage;
  try {
    figures = await ask(child, { type: 'lambda', requests: n }, 180_000);
  } finally {
    await child.stop();
  }
  const { type: _type, ...handler } = figures;
  if (handler.statuses.length !== 1 || handler.statuses[0] !== 200) throw new Error(`lambda handler answered ${handler.statuses.join(', ')}`);
  const gatewayMb = DEFAULT_MEMORY_MB.gateway;
  const ingestMb = DEFAULT_MEMORY_MB['log-ingest'];
  return {
    handler,
    gateway_memory_mb: gatewayMb,
    ingest_memory_mb: ingestMb,
    added_latency_ms_at_memory: {
      no_policy: latencyAtMemories(handler.no_policy.cpu_ms_per_request),
      one_policy: latencyAtMemories(handler.one_policy.cpu_ms_per_request),
      burst_max: latencyAtMemories(handler.cpu_ms_per_invocation_all.max),
    },
    cost: { ...costRows(costFigures(handler, gatewayMb, ingestMb)), prices: PRICES_USD, assumptions: ASSUMPTIONS },
    note:
      'The real gateway Lambda handler composed as in AWS (lambdas/shared/deps.ts: SQS queue adapter through the AWS SDK to a stand-in ' +
      'speaking SQS JSON in a process of its own, the limit counter through the deps DynamoDB client to DynamoDB Local, EMF metrics on, ' +
      'LOG_LEVEL=WARN), API Gateway REST events in, response stream out, against the mock; two keys (no policy, one exact rate-limit policy) ' +
      'in alternating blocks. cpu_ms = process.cpuUsage() around each invocation (this machine, x86, shared cores: Graviton differs). ' +
      'log_ingest: the real log-ingest consumer on the messages SQS received, in batches of the deployed size, outside the handler window; ' +
      'write units from item sizes (rollup updates priced by the rollup items they left).',
  };
}
