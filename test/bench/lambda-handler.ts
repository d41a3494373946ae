/**
 * The gateway Lambda handler (lambdas/gateway/handler.ts) in a process of its own, so its CPU time
 * and resident memory are the handler's alone: API Gateway REST proxy events in, the response
 * stream out, against the bench's mock provider, with a workspace key, request logs on and one
 * exact rate limits policy (the production shape). On `{type: 'lambda'}` it runs warm-up and N
 * sequential warm non-streamed invocations and answers CPU ms per invocation (`process.cpuUsage()`),
 * its RSS, and the DynamoDB writes per request: the limit counter's, counted on the document
 * client during the window, and the log ingest's, counted by running the real log-ingest consumer
 * (a function of its own in AWS, so outside the CPU window) on the log events the window queued.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { loadConfig } from '../../layers/core/src/config.ts';
import { createDeps } from '../../layers/core/src/deps.ts';
import type { LogQueueMessage } from '../../layers/core/src/observability/messages.ts';
import { ingestConsumer } from '../../layers/core/src/observability/install.ts';
import { attachLocalWorkers } from '../../layers/core/src/local-adapters.ts';
import { localAdapters } from '../../layers/core/src/local-adapters.ts';
import type { QueueMessage } from '../../layers/core/src/ports/queue.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { startDynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { installAwsLambdaGlobals, PreludeDecoder, ResponseStream, type StreamingHandler } from '../../lambdas/local/awslambda.ts';
import { requestEvent } from '../support/apigw-event.ts';
import { keyRecord } from '../support/records.ts';
import { CHAT_BODY } from './load.ts';
import { CHAT_PATH, rssReport, toMb, type LambdaMessage, type ReadyMessage } from './protocol.ts';

const ddb = await startDynamoDBLocal({ dataDir: ':memory:' });
const stop = async (code: number): Promise<never> => {
  setTimeout(() => process.exit(code), 5_000).unref();
  await ddb.stop().catch(() => undefined);
  process.exit(code);
};
process.on('disconnect', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

const mockUrl = process.env.BENCH_MOCK_URL ?? '';
const context = { functionName: 'gantry-gateway', awsRequestId: 'bench', getRemainingTimeInMillis: () => 900_000 } as unknown as Context;

/** DynamoDB write requests and their estimated write units (1 KB each, from the item's JSON size). */
const writes = { requests: 0, units: 0, counting: false };
const unitsOf = (item: unknown): number => Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify(item ?? {})) / 1024));

try {
  const config = loadConfig({
    TABLE_NAME: 'gantry-bench-lambda',
    DYNAMODB_ENDPOINT: ddb.endpoint,
    AWS_REGION: 'local',
    GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1',
    GW_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'gantry-bench-lambda-')),
    LOG_LEVEL: 'SILENT',
  });
  const client = new DynamoDBClient({ endpoint: ddb.endpoint, region: config.region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await ensureTable(client, config.tableName);
  client.destroy();
  const deps = createDeps(config, localAdapters(config));
  countWrites(deps.repos.table.doc);
  // The log events the handler queues are kept for the ingest count; in AWS they go to SQS.
  const queued: QueueMessage<LogQueueMessage>[] = [];
  attachLocalWorkers(deps, { ingest: async (batch) => (writes.counting && queued.push(...batch), []) });
  const boot = await ensureBootstrap(deps);
  const made = keyRecord({ organisation_id: boot.organisationId, workspace_id: boot.workspaceId, scopes: ['completions.write'] }, Date.now());
  await deps.repos.apiKeys.create(made.record);
  await deps.limits.repo.createRate(benchPolicy(boot.organisationId, boot.workspaceId, made.record.id));

  installAwsLambdaGlobals();
  const { createGatewayHandler } = await import('../../lambdas/gateway/handler.ts');
  const handler = createGatewayHandler(() => Promise.resolve(deps)) as unknown as StreamingHandler<APIGatewayProxyEvent, Context>;
  const headers = {
    authorization: 'Bearer sk-x',
    'content-type': 'application/json',
    'x-gw-api-key': made.key,
    'x-gw-provider': 'openai',
    'x-gw-custom-host': `${mockUrl}/v1`,
  };
  const body = CHAT_BODY.toString('utf8');
  const invoke = () => invokeOnce(handler, requestEvent('POST', CHAT_PATH, headers, body));

  process.on('message', (m: unknown) => {
    if (typeof m !== 'object' || m === null || !('type' in m) || m.type !== 'lambda') return;
    const n = 'requests' in m && typeof m.requests === 'number' ? m.requests : 500;
    void measure(invoke, n, queued, () => ingestConsumer(deps)).then(
      (reply) => process.send?.(reply),
      (err: unknown) => {
        console.error(err);
        void stop(1);
      },
    );
  });
  const ready: ReadyMessage = { type: 'ready', url: '' };
  process.send?.(ready);
} catch (err) {
  console.error(err);
  await stop(1);
}

async function measure(
  invoke: () => Promise<number>,
  n: number,
  queued: QueueMessage<LogQueueMessage>[],
  ingest: () => (b: readonly QueueMessage<LogQueueMessage>[]) => Promise<string[]>,
): Promise<LambdaMessage> {
  // Warm: the first invocation loads the key, the policies and the HTTP connection.
  for (let k = 0; k < Math.min(100, n); k++) await invoke();
  const statuses = new Set<number>();
  writes.requests = 0;
  writes.units = 0;
  writes.counting = true;
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let k = 0; k < n; k++) statuses.add(await invoke());
  const used = process.cpuUsage(cpu);
  const wallMs = performance.now() - started;
  const rss = rssReport();
  const limitWrites = { requests: writes.requests, units: writes.units };
  // The log ingest (its own function in AWS): its writes for the window's events, counted apart.
  await new Promise((r) => setTimeout(r, 200));
  writes.requests = 0;
  writes.units = 0;
  if (queued.length > 0) await ingest()(queued.splice(0));
  writes.counting = false;
  return {
    type: 'lambda',
    requests: n,
    statuses: [...statuses],
    cpu_ms_per_request: Math.round(((used.user + used.system) / 1000 / n) * 1000) / 1000,
    cpu_user_ms_per_request: Math.round((used.user / 1000 / n) * 1000) / 1000,
    wall_ms_per_request: Math.round((wallMs / n) * 1000) / 1000,
    rss_mb: rss.rssMb,
    heap_used_mb: rss.heapUsedMb,
    max_rss_mb: toMb(process.resourceUsage().maxRSS * 1024),
    gateway_writes_per_request: { requests: limitWrites.requests / n, units: limitWrites.units / n },
    log_ingest_writes_per_request: { requests: writes.requests / n, units: writes.units / n },
  };
}

/** One invocation as Lambda runs it; answers the status from the prelude. */
async function invokeOnce(handler: StreamingHandler<APIGatewayProxyEvent, Context>, event: APIGatewayProxyEvent): Promise<number> {
  let status = 0;
  const decoder = new PreludeDecoder(
    (p) => (status = p.statusCode),
    () => undefined,
  );
  const stream = new ResponseStream((c) => decoder.push(c));
  await handler(event, stream, context);
  if (!stream.writableFinished) await new Promise((r) => stream.once('finish', r));
  return status;
}

function benchPolicy(organisationId: string, workspaceId: string, keyId: string) {
  const now = new Date().toISOString();
  return {
    id: crypto.randomUUID(),
    name: 'bench',
    organisation_id: organisationId,
    workspace_id: workspaceId,
    conditions: [{ key: 'api_key', value: keyId }],
    group_by: [{ key: 'api_key' }],
    type: 'requests' as const,
    unit: 'rpm' as const,
    value: 1_000_000_000,
    mode: 'exact' as const,
    lease_size: null,
    status: 'active' as const,
    created_at: now,
    last_updated_at: now,
    created_by: null,
    last_updated_by: null,
  };
}

/** Counts write requests, and their write units by item size, on the process's document client. */
function countWrites(doc: import('@aws-sdk/lib-dynamodb').DynamoDBDocumentClient): void {
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      if (!writes.counting) return next(args);
      const input = args.input as {
        Item?: unknown;
        Key?: unknown;
        RequestItems?: Record<string, { PutRequest?: { Item: unknown }; DeleteRequest?: unknown }[]>;
        TransactItems?: unknown[];
      };
      const op = context.commandName ?? '';
      if (op === 'BatchWriteItemCommand') {
        for (const list of Object.values(input.RequestItems ?? {})) for (const r of list) writes.requests++, (writes.units += unitsOf(r.PutRequest?.Item));
      } else if (op === 'TransactWriteItemsCommand') {
        for (const t of input.TransactItems ?? []) writes.requests++, (writes.units += 2 * unitsOf(t));
      } else if (op === 'PutItemCommand' || op === 'PutCommand') writes.requests++, (writes.units += unitsOf(input.Item));
      else if (op === 'UpdateItemCommand' || op === 'UpdateCommand' || op === 'DeleteItemCommand' || op === 'DeleteCommand')
        writes.requests++, (writes.units += 1);
      return next(args);
    },
    { step: 'initialize', name: 'benchWriteCounter' },
  );
}
