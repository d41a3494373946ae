/**
 * The gateway Lambda handler (lambdas/gateway/handler.ts) in a process of its own, so its CPU time
 * and resident memory are the handler's alone, composed as in AWS (lambdas/shared/deps.ts: the AWS
 * adapters, EMF metrics on, LOG_LEVEL=WARN as infra/settings.ts deploys it): API Gateway REST proxy
 * events in, the response stream out, against the bench's mock provider. Its log events go through
 * the SQS queue adapter (the AWS SDK, SigV4, SendMessageBatch) to an SQS stand-in in a process of
 * its own (sqs-stand-in.ts), and the limit counter through the deps' DynamoDB client to DynamoDB Local.
 *
 * On `{type: 'lambda', requests}` it runs a warm-up and then `requests` sequential warm non-streamed
 * invocations for each of two keys, one no policy matches and one an exact rate-limit policy
 * matches, interleaved in alternating blocks so drift falls on both alike. It answers the CPU time of
 * each invocation (`process.cpuUsage()` around it: mean, p50, p99, max), the DynamoDB requests the
 * handler made (the limit counter), what it wrote to stdout (CloudWatch Logs: EMF metrics, log
 * lines) and sent to SQS, and then, outside the CPU window of the handler, what the real log-ingest
 * consumer (a function of its own in AWS) writes for the events SQS received, in batches of the
 * size the deployed event source hands it.
 */
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import type { LogQueueMessage } from '../../layers/core/src/observability/messages.ts';
import type { QueueMessage } from '../../layers/core/src/ports/queue.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { startDynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { installAwsLambdaGlobals, PreludeDecoder, ResponseStream, type StreamingHandler } from '../../lambdas/local/awslambda.ts';
import { requestEvent } from '../support/apigw-event.ts';
import { keyRecord } from '../support/records.ts';
import { ask, startNodeChild, stopAll } from './children.ts';
import { countSends, itemBytes, newTally, resolveUpdates, type DynamoTally } from './ddb-units.ts';
import { CHAT_BODY } from './load.ts';
import { CHAT_PATH, rssReport, toMb, type LambdaKeyFigures, type LambdaMessage, type ReadyMessage } from './protocol.ts';
import { privateMb } from './proc.ts';
import { quantile, round3 } from './stats.ts';

/** Messages the log-ingest function gets per invocation at load (infra/stacks/observability-stack.ts INGEST_BATCH_SIZE). */
const INGEST_BATCH_SIZE = 100;
/** Invocations of one key in a row before the other key's turn. */
const BLOCK = 25;

const ddb = await startDynamoDBLocal({ dataDir: ':memory:' });
const stop = async (code: number): Promise<never> => {
  setTimeout(() => process.exit(code), 5_000).unref();
  await Promise.all([ddb.stop().catch(() => undefined), stopAll()]);
  process.exit(code);
};
process.on('disconnect', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

const mockUrl = process.env.BENCH_MOCK_URL ?? '';
const context = { functionName: 'gantry-gateway', awsRequestId: 'bench', getRemainingTimeInMillis: () => 900_000 } as unknown as Context;

type KeyName = 'no_policy' | 'one_policy';

/** Where the DynamoDB requests and stdout writes of the moment are counted (undefined: nowhere). */
let counting: { dynamo: DynamoTally; stdout: { bytes: number; lines: number } } | undefined;

try {
  const sqs = await startNodeChild('sqs_stand_in', 'sqs-stand-in.ts', {}, 15_000);
  const tableName = 'gantry-bench-lambda';
  // The function's environment as the CDK app sets it, pointed at the local stand-ins.
  Object.assign(process.env, {
    TABLE_NAME: tableName,
    DYNAMODB_ENDPOINT: ddb.endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_SQS: sqs.ready.url,
    QUEUE_URL_LOGS: `${sqs.ready.url}/000000000000/gantry-logs`,
    GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1',
    GW_EMF_METRICS: 'ON',
    LOG_LEVEL: 'WARN',
    POWERTOOLS_SERVICE_NAME: 'gantry-gateway',
  });
  const client = new DynamoDBClient({ endpoint: ddb.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await ensureTable(client, tableName);
  client.destroy();

  const { depsFromEnv } = await import('../../lambdas/shared/deps.ts');
  const deps = await depsFromEnv();
  countSends(deps.repos.table.doc as unknown as Parameters<typeof countSends>[0], () => counting?.dynamo);
  countStdout();
  const boot = await ensureBootstrap(deps);
  const key = async (withPolicy: boolean) => {
    const made = keyRecord({ organisation_id: boot.organisationId, workspace_id: boot.workspaceId, scopes: ['completions.write'] }, Date.now());
    await deps.repos.apiKeys.create(made.record);
    if (withPolicy) await deps.limits.repo.createRate(benchPolicy(boot.organisationId, boot.workspaceId, made.record.id));
    return made.key;
  };
  const keys: Record<KeyName, string> = { no_policy: await key(false), one_policy: await key(true) };

  installAwsLambdaGlobals();
  const { createGatewayHandler } = await import('../../lambdas/gateway/handler.ts');
  const handler = createGatewayHandler(depsFromEnv) as unknown as StreamingHandler<APIGatewayProxyEvent, Context>;
  const body = CHAT_BODY.toString('utf8');
  const invoke = (name: KeyName) => {
    const headers = {
      authorization: 'Bearer sk-x',
      'content-type': 'application/json',
      'x-gw-api-key': keys[name],
      'x-gw-provider': 'openai',
      'x-gw-custom-host': `${mockUrl}/v1`,
    };
    return invokeOnce(handler, requestEvent('POST', CHAT_PATH, headers, body));
  };
  const takeSqs = () => ask(sqs.child, { type: 'sqs' }, 30_000);

  process.on('message', (m: unknown) => {
    if (typeof m !== 'object' || m === null || !('type' in m) || m.type !== 'lambda') return;
    const n = 'requests' in m && typeof m.requests === 'number' ? m.requests : 300;
    void measure(invoke, n, takeSqs, deps).then(
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

interface KeyRun {
  cpuUs: number[];
  wallMs: number[];
  dynamo: DynamoTally;
  stdout: { bytes: number; lines: number };
  responseBytes: number;
}

async function measure(
  invoke: (k: KeyName) => Promise<{ status: number; bytes: number }>,
  n: number,
  takeSqs: () => Promise<{ bodies: string[]; requests: number }>,
  deps: CoreDeps,
): Promise<LambdaMessage> {
  const names: KeyName[] = ['no_policy', 'one_policy'];
  // Warm: the first invocations load the keys, the policies, the SDK's SQS module and the connections.
  for (let k = 0; k < Math.min(100, n); k++) for (const name of names) await invoke(name);
  await takeSqs();
  const newRun = (): KeyRun => ({ cpuUs: [], wallMs: [], dynamo: newTally(), stdout: { bytes: 0, lines: 0 }, responseBytes: 0 });
  const runs: Record<KeyName, KeyRun> = { no_policy: newRun(), one_policy: newRun() };
  const statuses = new Set<number>();
  for (let done = 0; done < n; done += BLOCK) {
    for (const name of names) {
      const run = runs[name];
      counting = { dynamo: run.dynamo, stdout: run.stdout };
      for (let k = 0; k < Math.min(BLOCK, n - done); k++) {
        const cpu = process.cpuUsage();
        const began = performance.now();
        const r = await invoke(name);
        const used = process.cpuUsage(cpu);
        run.wallMs.push(performance.now() - began);
        run.cpuUs.push(used.user + used.system);
        run.responseBytes += r.bytes;
        statuses.add(r.status);
      }
      counting = undefined;
    }
  }
  const rss = rssReport();
  const sent = await takeSqs();
  const ingest = await ingestFigures(deps, sent.bodies);
  const all = [...runs.no_policy.cpuUs, ...runs.one_policy.cpuUs];
  const invocations = all.length;
  const messageBytes = sent.bodies.reduce((s, b) => s + Buffer.byteLength(b), 0);
  return {
    type: 'lambda',
    requests: n,
    statuses: [...statuses],
    no_policy: keyFigures(runs.no_policy),
    one_policy: keyFigures(runs.one_policy),
    cpu_ms_per_invocation_all: { p99: round3(quantile(all, 0.99) / 1000), max: round3(Math.max(...all) / 1000) },
    rss_mb: rss.rssMb,
    private_mb: privateMb(process.pid) ?? null,
    heap_used_mb: rss.heapUsedMb,
    max_rss_mb: toMb(process.resourceUsage().maxRSS * 1024),
    request_bytes: CHAT_BODY.length,
    sqs: {
      requests_per_invocation: round3(sent.requests / invocations),
      messages_per_invocation: round3(sent.bodies.length / invocations),
      bytes_per_message: sent.bodies.length > 0 ? Math.round(messageBytes / sent.bodies.length) : 0,
    },
    log_ingest: ingest,
  };
}

function keyFigures(r: KeyRun): LambdaKeyFigures {
  const n = r.cpuUs.length;
  const per = (x: number) => round3(x / n);
  return {
    invocations: n,
    cpu_ms_per_request: round3(r.cpuUs.reduce((s, x) => s + x, 0) / n / 1000),
    cpu_ms: { p50: round3(quantile(r.cpuUs, 0.5) / 1000), p99: round3(quantile(r.cpuUs, 0.99) / 1000), max: round3(Math.max(...r.cpuUs) / 1000) },
    wall_ms: { mean: round3(r.wallMs.reduce((s, x) => s + x, 0) / n), p50: round3(quantile(r.wallMs, 0.5)) },
    dynamodb_per_request: {
      writes: per(r.dynamo.writes),
      write_units: per(r.dynamo.writeUnits),
      reads: per(r.dynamo.reads),
      read_units: per(r.dynamo.readUnits),
    },
    stdout_per_request: { lines: per(r.stdout.lines), bytes: Math.round(r.stdout.bytes / n) },
    response_bytes: Math.round(r.responseBytes / n),
  };
}

/** The log-ingest consumer on what SQS received, in the deployed batch size: its DynamoDB requests and CPU per log. */
async function ingestFigures(deps: CoreDeps, bodies: string[]): Promise<LambdaMessage['log_ingest']> {
  const { ingestConsumer } = await import('../../layers/core/src/observability/install.ts');
  const consume = ingestConsumer(deps);
  const messages: QueueMessage<LogQueueMessage>[] = bodies.map((b, i) => ({ id: `m${i}`, body: JSON.parse(b) as LogQueueMessage, attempts: 0 }));
  const logs = messages.reduce((s, m) => s + (m.body.kind === 'logs' ? m.body.events.length : m.body.kind === 'log' ? 1 : 0), 0);
  const dynamo = newTally();
  let cpuUs = 0;
  let failed = 0;
  counting = { dynamo, stdout: { bytes: 0, lines: 0 } };
  for (let i = 0; i < messages.length; i += INGEST_BATCH_SIZE) {
    const cpu = process.cpuUsage();
    failed += (await consume(messages.slice(i, i + INGEST_BATCH_SIZE))).length;
    const used = process.cpuUsage(cpu);
    cpuUs += used.user + used.system;
  }
  counting = undefined;
  // Rollup updates return no item: priced by the size of the rollup items they left.
  await resolveUpdates(dynamo, async (TableName, Key) => {
    const out = await deps.repos.table.doc.send(new GetCommand({ TableName, Key }));
    return out.Item ? itemBytes(out.Item) : undefined;
  });
  const per = (x: number) => (logs > 0 ? round3(x / logs) : 0);
  return {
    logs,
    failed_messages: failed,
    batch_size: INGEST_BATCH_SIZE,
    invocations: Math.ceil(messages.length / INGEST_BATCH_SIZE),
    cpu_ms_per_log: per(cpuUs / 1000),
    writes_per_log: per(dynamo.writes),
    write_units_per_log: per(dynamo.writeUnits),
    reads_per_log: per(dynamo.reads),
    read_units_per_log: per(dynamo.readUnits),
  };
}

/** One invocation as Lambda runs it; answers the status from the prelude and the body's bytes. */
async function invokeOnce(handler: StreamingHandler<APIGatewayProxyEvent, Context>, event: APIGatewayProxyEvent): Promise<{ status: number; bytes: number }> {
  let status = 0;
  let bytes = 0;
  const decoder = new PreludeDecoder(
    (p) => (status = p.statusCode),
    (chunk) => (bytes += chunk.length),
  );
  const stream = new ResponseStream((c) => decoder.push(c));
  await handler(event, stream, context);
  if (!stream.writableFinished) await new Promise((r) => stream.once('finish', r));
  return { status, bytes };
}

/** What the function writes to stdout (and so to CloudWatch Logs: EMF lines, log lines), counted while `counting` says so. */
function countStdout(): void {
  const write = process.stdout.write.bind(process.stdout) as (...a: unknown[]) => boolean;
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (counting) {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      counting.stdout.bytes += Buffer.byteLength(text);
      counting.stdout.lines += text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    }
    return write(chunk, ...rest);
  }) as typeof process.stdout.write;
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
