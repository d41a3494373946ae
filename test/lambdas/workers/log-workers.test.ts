/**
 * The log workers and the gateway's log flush as Lambda runs them: an SQS event of log events in,
 * logs stored and failures reported per message; and the gateway function does not end its
 * invocation before the request's log event has been queued (a frozen Lambda would stall it).
 */
import type { APIGatewayProxyEvent, Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { ensureBootstrap } from '../../../layers/core/src/bootstrap.ts';
import type { GatewayHook } from '../../../layers/core/src/kernel/lifecycle.ts';
import { observability } from '../../../layers/core/src/observability/install.ts';
import { LOGS_QUEUE, type LogQueueMessage } from '../../../layers/core/src/observability/messages.ts';
import type { LocalQueueFactory } from '../../../layers/core/src/ports/queue-factory.ts';
import { installAwsLambdaGlobals, PreludeDecoder, ResponseStream, type StreamingHandler } from '../../../lambdas/local/awslambda.ts';
import { createLogIngestHandler, ingestFromEnv } from '../../../lambdas/workers/log-ingest/handler.ts';
import { ensureTraceId } from '../../../lambdas/shared/observability.ts';
import { requestEvent } from '../../support/apigw-event.ts';
import { createTestDeps } from '../../support/deps.ts';
import { sqsRecord as queueRecord } from '../../support/sqs-event.ts';
import { ADMIN_KEY } from '../../support/gantry.ts';
import { syntheticEvents } from '../../support/observability.ts';

const context = { functionName: 'gantry-log-ingest', awsRequestId: 'req-1', getRemainingTimeInMillis: () => 60_000 } as unknown as Context;

const sqsRecord = (body: string): SQSRecord => queueRecord(body, 'logs');

describe('log-ingest worker', () => {
  type SqsHandler = (e: SQSEvent, c: Context) => Promise<SQSBatchResponse>;

  it('stores the log events of an SQS batch and reports the unreadable message as failed', async () => {
    const deps = await createTestDeps();
    try {
      const events = syntheticEvents(5, { start: Date.now() - 60_000, spanMs: 30_000, workspaceId: 'ws-lambda', seed: 51 });
      const good = [
        sqsRecord(JSON.stringify({ kind: 'logs', events: events.slice(0, 3) })),
        ...events.slice(3).map((event) => sqsRecord(JSON.stringify({ kind: 'log', event }))),
      ];
      const bad = sqsRecord('{not json');
      // Built as the deployed function builds it: from the environment alone, not from createDeps.
      const env = {
        TABLE_NAME: deps.config.tableName,
        DYNAMODB_ENDPOINT: deps.config.dynamodbEndpoint ?? '',
        AWS_REGION: 'local',
        LOG_LEVEL: 'SILENT',
        QUEUE_URL_LOGS: 'https://sqs.local.amazonaws.com/1/logs',
      };
      const handler = createLogIngestHandler(() => ingestFromEnv(env)) as unknown as SqsHandler;
      const out = await handler({ Records: [...good, bad] }, context);
      expect(out.batchItemFailures).toEqual([{ itemIdentifier: bad.messageId }]);
      for (const e of events) expect((await observability(deps).logs.get(e.id, [e.workspace_id ?? '-']))?.id).toBe(e.id);
    } finally {
      deps.upstream.close();
    }
  });

  it('fails naming the variable when the environment has no URL for the logs queue', async () => {
    await expect(ingestFromEnv({ TABLE_NAME: 't', AWS_REGION: 'local' })).rejects.toThrow(/QUEUE_URL_LOGS/);
  });
});

describe('gateway function and its logs', () => {
  it('generates the trace id when the client sent none, for the pipeline and the log lines alike', () => {
    const event = requestEvent('GET', '/v1/health');
    const id = ensureTraceId(event);
    expect(event.headers['x-gw-trace-id']).toBe(id);
    expect(ensureTraceId(requestEvent('GET', '/v1/health', { 'X-Gw-Trace-Id': 't-1' }))).toBe('t-1');
  });

  it('queues the log event before the invocation ends', async () => {
    installAwsLambdaGlobals();
    const { createGatewayHandler } = await import('../../../lambdas/gateway/handler.ts');
    const deps = await createTestDeps();
    try {
      await ensureBootstrap(deps, ADMIN_KEY);
      // A slow hook stands in for work that outlives the response (blob writes, a queue send).
      let finished = false;
      let pending: Promise<void> = Promise.resolve();
      const slow: GatewayHook = {
        name: 'slow',
        complete() {
          pending = new Promise<void>((r) => setTimeout(r, 50)).then(() => {
            finished = true;
          });
        },
        flush: () => pending,
      };
      deps.gatewayHooks.push(slow);
      const queue = (deps.queues as LocalQueueFactory).get<LogQueueMessage>(LOGS_QUEUE);
      const sent: LogQueueMessage[] = [];
      queue.setConsumer(async (batch) => {
        sent.push(...batch.map((m) => m.body));
        return [];
      });
      const handler = createGatewayHandler(() => Promise.resolve(deps)) as unknown as StreamingHandler<APIGatewayProxyEvent, Context>;
      const stream = new ResponseStream((c) => decoder.push(c));
      let status = 0;
      const decoder = new PreludeDecoder(
        (p) => (status = p.statusCode),
        () => undefined,
      );
      await handler(requestEvent('POST', '/v1/chat/completions', { 'content-type': 'application/json', 'x-gw-trace-id': 'flush-1' }, '{}'), stream, context);
      // The invocation is over: its hooks' work is done, the log event is in the queue.
      expect(status).toBe(401);
      expect(finished).toBe(true);
      await queue.drain();
      const traces = sent.flatMap((m) => (m.kind === 'log' ? [m.event.trace_id] : m.kind === 'logs' ? m.events.map((e) => e.trace_id) : []));
      expect(traces).toContain('flush-1');
    } finally {
      deps.upstream.close();
    }
  });
});
