/**
 * The deploy rehearsal (issue 35, `npm run rehearse`): every synthesized Node function runs from its
 * cdk.out asset under AWS's runtime client (aws-lambda-ric) against a local Lambda Runtime API, with
 * its synthesized environment, and is invoked with the events its triggers send: a gateway batch
 * runs through the synthesized state machine's definition, a realtime exchange is posted back
 * through `@connections`. Every AWS call a function (or the state machine's role) makes is checked
 * against its synthesized role policies; cfn-lint checks the templates.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Template } from '../rehearsal/assembly.ts';
import { customResourceEvent, restEvent, scheduledEvent, sqsEvent, websocketEvent } from '../rehearsal/events.ts';
import { runCfnLint, type CfnLintResult } from '../rehearsal/cfn-lint.ts';
import { startRehearsal, synthesize, type Rehearsal } from '../rehearsal/rehearsal.ts';
import { splitPrelude, type Outcome } from '../rehearsal/runtime-api.ts';
import { startMockBatchProvider, type MockBatchProvider } from '../support/mock-batch-provider.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { REALTIME_USAGE, startMockRealtime, type MockRealtime } from '../support/mock-realtime.ts';

// `gantry:trustedCustomHosts` lets the gateway call the mock provider on loopback, as a deployment would name its own hosts.
const CONTEXT = { 'gantry:trustedCustomHosts': '127.0.0.1' };
const GATEWAY = 'Gantry-Api/Gateway';
const ADMIN = 'Gantry-Api/Admin';

/** The (function, trigger) pairs the tests below send events for. */
const REHEARSED = [
  'Gantry-Api/Gateway <- rest-api',
  'Gantry-Api/Admin <- rest-api',
  'Gantry-Identity/BootstrapWorker <- custom-resource:Custom::GantryBootstrap',
  'Gantry-Observability/LogIngestWorker <- sqs',
  'Gantry-Observability/LogExportWorker <- sqs',
  'Gantry-Limits/UsageResetWorker <- schedule',
  'Gantry-Identity/KeyLifecycleWorker <- schedule',
  'Gantry-Limits/AlertsWorker <- sqs',
  'Gantry-Mcp/McpSyncWorker <- sqs',
  'Gantry-Realtime/RealtimeFunction <- websocket-api',
  'Gantry-Batches/BatchWorker <- state-machine',
];

let cdkOut: string;
/** cfn-lint runs beside the rehearsal (a Python process of its own, tens of seconds). */
let lint: Promise<CfnLintResult>;
let r: Rehearsal;
let mock: MockOpenAI;
let batchProvider: MockBatchProvider;
let realtime: MockRealtime;
let ownerKey: string;
let serviceKey: string | undefined;

/** The body of a buffered outcome, parsed; fails with the function's error otherwise. */
function answer(o: Outcome): Record<string, unknown> {
  if (o.kind !== 'response') throw new Error(`expected a buffered response, got ${JSON.stringify(o)}`);
  return JSON.parse(o.body.toString('utf8')) as Record<string, unknown>;
}

async function admin(
  method: string,
  p: string,
  body?: unknown,
  query: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers = { 'x-gw-api-key': ownerKey, ...(body ? { 'content-type': 'application/json' } : {}) };
  const out = answer(await r.fn(ADMIN).invoke(restEvent(method, p, headers, body ? JSON.stringify(body) : null, query)));
  const text = out.isBase64Encoded ? Buffer.from(String(out.body), 'base64').toString('utf8') : String(out.body);
  return { status: Number(out.statusCode), json: JSON.parse(text) as Record<string, unknown> };
}

/** A key of the default workspace for the gateway calls (made once, through the admin function). */
async function workspaceKey(): Promise<string> {
  if (serviceKey) return serviceKey;
  const created = await admin('POST', '/v1/api-keys/workspace/service', { name: 'rehearsal', workspace_id: 'default', scopes: ['completions.write'] });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  serviceKey = String(created.json.key);
  return serviceKey;
}

/** A gateway call through the REST proxy event, answered in response-streaming mode: status and body. */
async function gateway(method: string, p: string, headers: Record<string, string>, body?: string | Buffer): Promise<{ status: number; text: string }> {
  const out = await r.fn(GATEWAY).invoke(restEvent(method, p, headers, body ?? null));
  if (out.kind !== 'stream') throw new Error(`expected a streamed response, got ${JSON.stringify(out)}`);
  const { prelude, body: rest } = splitPrelude(out.body);
  return { status: Number(prelude.statusCode), text: rest.toString('utf8') };
}

/** Waits until `queue` holds at least `n` messages, and returns them (taking them off the queue). */
async function drain(queueName: string, n = 1): Promise<string[]> {
  for (let i = 0; i < 200 && (r.aws.queues.get(queueName)?.length ?? 0) < n; i++) await new Promise((res) => setTimeout(res, 25));
  return r.aws.queues.get(queueName)?.splice(0) ?? [];
}

const queueOf = (envName: string, fnPrefix: string) => new URL(r.fn(fnPrefix).spec.env[envName]!).pathname.split('/')[2]!;

beforeAll(async () => {
  cdkOut = process.env.REHEARSAL_CDK_OUT ?? synthesize(CONTEXT);
  lint = runCfnLint(cdkOut);
  [r, mock, batchProvider, realtime] = await Promise.all([
    startRehearsal({ cdkOut, dynamodbEndpoint: inject('dynamodbEndpoint') }),
    startMockOpenAI(),
    startMockBatchProvider(),
    startMockRealtime(),
  ]);
}, 170_000);

afterAll(async () => {
  await Promise.all([r?.close(), mock?.close(), batchProvider?.close(), realtime?.close(), lint?.catch(() => undefined)]);
  if (!process.env.REHEARSAL_CDK_OUT && cdkOut) rmSync(path.dirname(cdkOut), { recursive: true, force: true });
});

describe('the deploy rehearsal', () => {
  it('starts every Node function of the templates under the runtime client', async () => {
    const ids = r.functions.map((f) => f.spec.name);
    expect(ids.length).toBeGreaterThanOrEqual(10);
    for (const f of r.functions) expect(await f.ready, `${f.spec.name}:\n${f.output()}`).toBeUndefined();
  });

  it('bootstraps through the custom resource: the owner key lands in the synthesized secret', async () => {
    const [stack, res] = [...r.assembly.stacks.values()].flatMap((s) =>
      Object.entries(s.template.Resources)
        .filter(([, x]) => x.Type === 'Custom::GantryBootstrap')
        .map(([id, x]) => [s.name, { id, x }] as const),
    )[0]!;
    const properties = r.assembly.resolve(res.x.Properties ?? {}, stack) as Record<string, unknown>;
    const event = customResourceEvent('Create', { stack, logicalId: res.id, type: res.x.Type, properties }, r.aws.url);
    expect(await r.fn('Gantry-Identity/BootstrapWorker').invoke(event)).toMatchObject({ kind: 'response' });
    expect(r.aws.cfnResponses.at(-1)).toMatchObject({ Status: 'SUCCESS', RequestId: event.RequestId });
    ownerKey = r.aws.secrets.get(String(properties.AdminKeySecretId))!;
    expect(ownerKey).toMatch(/^gw_/);
  });

  it('answers an admin call through the REST proxy event', async () => {
    const workspaces = await admin('GET', '/v1/workspaces');
    expect(workspaces.status).toBe(200);
    expect((workspaces.json.data as { slug: string }[]).map((w) => w.slug)).toEqual(['default']);
  });

  it('streams a chat completion through the gateway in response-streaming mode, and its log reaches the table', async () => {
    const headers = {
      'x-gw-api-key': await workspaceKey(),
      'x-gw-provider': 'openai',
      'x-gw-custom-host': `${mock.url}/v1`,
      authorization: 'Bearer sk-test',
      'content-type': 'application/json',
    };
    mock.queue.push({ kind: 'stream', chunks: ['Hel', 'lo'], usage: true });
    const body = JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Hello' }] });
    const out = await r.fn(GATEWAY).invoke(restEvent('POST', '/v1/chat/completions', headers, body));
    expect(out.kind, JSON.stringify(out)).toBe('stream');
    if (out.kind !== 'stream') return;
    expect(out.contentType).toBe('application/vnd.awslambda.http-integration-response');
    const { prelude, body: sse } = splitPrelude(out.body);
    expect(prelude.statusCode).toBe(200);
    expect(prelude.headers?.['content-type']).toContain('text/event-stream');
    const text = sse.toString('utf8');
    expect(text).toContain('"Hel"');
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);

    // The gateway sent the log to its queue; the ingest worker takes the batch the event source mapping delivers.
    const logsQueue = queueOf('QUEUE_URL_LOGS', GATEWAY);
    const bodies = await drain(logsQueue);
    expect(bodies.length).toBeGreaterThan(0);
    expect(answer(await r.fn('Gantry-Observability/LogIngestWorker').invoke(sqsEvent(logsQueue, bodies)))).toEqual({ batchItemFailures: [] });
    const logs = await admin('GET', '/v1/logs', undefined, { workspace_id: 'default' });
    expect(logs.status).toBe(200);
    expect((logs.json.data as unknown[]).length).toBe(1);
  });

  it('exports the logs: the admin call queues the export, the export worker writes it to the bucket', async () => {
    const created = await admin('POST', '/v1/logs/exports', { workspace_id: 'default', filters: {}, requested_data: ['id', 'ai_model'] });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const started = await admin('POST', `/v1/logs/exports/${String(created.json.id)}/start`);
    expect(started.status, JSON.stringify(started.json)).toBe(200);
    const queue = queueOf('QUEUE_URL_LOG_EXPORTS', ADMIN);
    const bodies = await drain(queue);
    expect(answer(await r.fn('Gantry-Observability/LogExportWorker').invoke(sqsEvent(queue, bodies)))).toEqual({ batchItemFailures: [] });
    expect([...r.aws.objects.keys()].some((k) => k.includes('exports/'))).toBe(true);
  });

  it('runs the scheduled workers on the schedule event', async () => {
    for (const id of ['Gantry-Limits/UsageResetWorker', 'Gantry-Identity/KeyLifecycleWorker']) {
      const out = await r.fn(id).invoke(scheduledEvent(id));
      expect(out.kind, `${id}: ${JSON.stringify(out)}`).toBe('response');
    }
  });

  it('takes SQS batches on the alerts and MCP sync workers, reporting a bad message as a batch item failure', async () => {
    for (const id of ['Gantry-Limits/AlertsWorker', 'Gantry-Mcp/McpSyncWorker']) {
      const fn = r.assembly.functions().find((f) => f.id.startsWith(id))!;
      const queue = fn.triggers.find((t) => t.startsWith('sqs:'))!.slice(4);
      const event = sqsEvent(queue, ['{not json']);
      expect(answer(await r.fn(id).invoke(event)), id).toEqual({ batchItemFailures: [{ itemIdentifier: event.Records[0]!.messageId }] });
    }
  });

  it('answers the WebSocket $connect (refusing a missing key) and $disconnect events', async () => {
    const fn = r.fn('Gantry-Realtime/RealtimeFunction');
    const refused = answer(await fn.invoke(websocketEvent('$connect', 'c1', { headers: {}, queryStringParameters: { model: 'gpt-4o-realtime' } })));
    expect(refused.statusCode).toBe(401);
    expect(answer(await fn.invoke(websocketEvent('$disconnect', 'c1')))).toMatchObject({ statusCode: 200 });
  });

  it('runs a batch through the state machine: file and batch made on the gateway, StartExecution recorded, every step of the definition run to completed', async () => {
    const key = await workspaceKey();
    const lines = ['a', 'b', 'c'].map((id) =>
      JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: id }] } }),
    );
    const form = new FormData();
    form.append('file', new Blob([`${lines.join('\n')}\n`]), 'in.jsonl');
    form.append('purpose', 'batch');
    const multipart = new Request('https://upload.invalid/', { method: 'POST', body: form });
    const upload = await gateway(
      'POST',
      '/v1/files',
      { 'x-gw-api-key': key, 'content-type': multipart.headers.get('content-type')! },
      Buffer.from(await multipart.arrayBuffer()),
    );
    expect(upload.status, upload.text).toBe(200);
    const fileId = String((JSON.parse(upload.text) as { id: string }).id);

    const providerHeaders = { 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${batchProvider.url}/v1`, authorization: 'Bearer sk-test' };
    const created = await gateway(
      'POST',
      '/v1/batches',
      { ...providerHeaders, 'content-type': 'application/json' },
      JSON.stringify({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' }),
    );
    expect(created.status, created.text).toBe(200);
    const batchId = String((JSON.parse(created.text) as { id: string }).id);

    // The gateway started one execution of the synthesized state machine, named after the batch.
    const machine = r.assembly.stateMachines().find((m) => m.id.startsWith('Gantry-Batches/'))!;
    const execution = r.aws.executions.find((e) => e.name === batchId)!;
    expect(execution).toEqual({ stateMachineArn: machine.arn, name: batchId, input: JSON.stringify({ batchId }) });

    const trace = await r.runExecution(execution);
    expect(trace, trace.events.join('\n')).toMatchObject({ status: 'SUCCEEDED' });
    expect(trace.events).toEqual(['Start', 'Validated', 'Chunks', 'Chunks[0]/RunChunk', 'Chunks ran 1 iterations, at most 1 at once', 'Finalize', 'Done']);

    const get = await gateway('GET', `/v1/batches/${batchId}`, { 'x-gw-api-key': key });
    const batch = JSON.parse(get.text) as { status: string; request_counts: unknown; output_file_id: string };
    expect(batch).toMatchObject({ status: 'completed', request_counts: { total: 3, completed: 3, failed: 0 } });
    const output = await gateway('GET', `/v1/files/${batch.output_file_id}/content`, { 'x-gw-api-key': key });
    const outLines = output.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { custom_id: string; response: { status_code: number; body: { choices: { message: { content: string } }[] } } });
    expect(outLines.map((l) => [l.custom_id, l.response.status_code, l.response.body.choices[0]!.message.content])).toEqual([
      ['a', 200, 'echo a'],
      ['b', 200, 'echo b'],
      ['c', 200, 'echo c'],
    ]);
    expect([...batchProvider.calls.entries()].sort()).toEqual([
      ['a', 1],
      ['b', 1],
      ['c', 1],
    ]);
  });

  it('takes the catch path of the state machine when a step fails: MarkFailed, then the execution fails', async () => {
    const machine = r.assembly.stateMachines().find((m) => m.id.startsWith('Gantry-Batches/'))!;
    const trace = await r.runExecution({ stateMachineArn: machine.arn, name: 'batch_unknown', input: JSON.stringify({ batchId: 'batch_unknown' }) });
    expect(trace, trace.events.join('\n')).toMatchObject({ status: 'FAILED', error: 'BatchFailed' });
    expect(trace.events.slice(0, 3)).toEqual(['Start', expect.stringMatching(/^Start caught \S+ -> MarkFailed$/), 'MarkFailed']);
  });

  it('relays a realtime text exchange: $connect with a key, $default to the provider, its answer posted to the client through @connections, $disconnect', async () => {
    const fn = r.fn('Gantry-Realtime/RealtimeFunction');
    const stack = r.assembly.stacks.get('Gantry-Realtime')!;
    const apiLogicalId = Object.keys(stack.template.Resources).find((id) => stack.template.Resources[id]!.Type === 'AWS::ApiGatewayV2::Api')!;
    const apiId = r.assembly.ref('Gantry-Realtime', apiLogicalId);
    const context = { domainName: await r.aws.connectionsDomain(apiId), apiId };
    const headers = {
      'x-gw-api-key': await workspaceKey(),
      'x-gw-provider': 'openai',
      'x-gw-custom-host': `${realtime.url}/v1`,
      authorization: 'Bearer sk-test',
    };
    const multiValueHeaders = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]]));
    const id = 'rehearsal-connection=';

    const connect = websocketEvent('$connect', id, { headers, multiValueHeaders, queryStringParameters: { model: 'gpt-4o-realtime-preview' } }, context);
    expect(answer(await fn.invoke(connect))).toMatchObject({ statusCode: 200 });
    const say = { type: 'response.create', response: { metadata: { text: 'Hello from the provider' } } };
    expect(answer(await fn.invoke(websocketEvent('$default', id, { body: JSON.stringify(say) }, context)))).toMatchObject({ statusCode: 200 });

    const events = (r.aws.posted.get(id) ?? []).map((b) => JSON.parse(b.toString('utf8')) as { type: string; delta?: string; response?: { usage?: unknown } });
    expect(events[0]?.type).toBe('session.created');
    expect(
      events
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe('Hello from the provider');
    expect(events.at(-1)).toMatchObject({ type: 'response.done', response: { usage: REALTIME_USAGE } });
    expect(realtime.connections.at(-1)?.headers.authorization).toBe('Bearer sk-test');

    expect(answer(await fn.invoke(websocketEvent('$disconnect', id, {}, context)))).toMatchObject({ statusCode: 200 });
    const posts = r.aws.calls.filter((c) => c.caller === fn.spec.name && c.action === 'execute-api:ManageConnections');
    expect(posts[0]?.resource).toBe(`arn:aws:execute-api:us-east-1:123456789012:${apiId}/prod/POST/@connections/${id}`);
  });

  it('covers every trigger of every function in the templates', () => {
    const triggers = r.assembly
      .functions()
      .filter((f) => f.runtime.startsWith('nodejs'))
      .flatMap((f) => f.triggers.map((t) => `${f.id} <- ${t.replace(/^sqs:.*/, 'sqs')}`));
    // A new function or trigger fails here until a test above sends it its event.
    expect(triggers.filter((t) => !REHEARSED.some((c) => t.startsWith(c.split(' <- ')[0]!) && t.endsWith(c.split(' <- ')[1]!)))).toEqual([]);
    expect(r.functions).toHaveLength(new Set(triggers.map((t) => t.split(' <- ')[0])).size);
  });
});

describe('the IAM check of the rehearsal', () => {
  it('allows every AWS call each function made (unused grants are warnings)', () => {
    expect(r.aws.refused).toEqual([]);
    const reports = r.iam();
    // The batch state machine's role is judged too (its Tasks invoke the batch function).
    expect([...reports.keys()]).toContain(r.assembly.stateMachines().find((m) => m.id.startsWith('Gantry-Batches/'))!.id);
    const denied = [...reports.values()].flatMap((rep) => rep.denied);
    const unused = [...reports.entries()].flatMap(([id, rep]) => rep.unused.map((u) => `${id}: ${u}`));
    if (unused.length) console.warn(`rehearsal: grants no call used (least privilege):\n  ${unused.join('\n  ')}`);
    expect(denied).toEqual([]);
  });

  it('fails naming the call and the policy when a grant is removed from the template', () => {
    const stack = r.assembly.stacks.get('Gantry-Api')!;
    const template = structuredClone(stack.template) as Template;
    const policyId = Object.keys(template.Resources).find((id) => id.startsWith('GatewayRoleDefaultPolicy'))!;
    const doc = template.Resources[policyId]!.Properties!.PolicyDocument as { Statement: { Action: string | string[] }[] };
    doc.Statement = doc.Statement.filter((s) => ![s.Action].flat().includes('sqs:SendMessage'));
    const denied = r.iam(r.assembly.withTemplate('Gantry-Api', template)).get(r.fn(GATEWAY).spec.name)!.denied;
    expect(denied.join('\n')).toMatch(/Gantry-Api\/Gateway\S* calls sqs:SendMessage on arn:aws:sqs:us-east-1:123456789012:\S+Logs\S+/);
    expect(denied.join('\n')).toContain(`Gantry-Api/${policyId}`);
  });

  it('fails naming the variable when one is removed from a function environment in the template', async () => {
    const stack = r.assembly.stacks.get('Gantry-Api')!;
    const template = structuredClone(stack.template) as Template;
    const adminId = Object.keys(template.Resources).find((id) => id.startsWith('Admin') && template.Resources[id]!.Type === 'AWS::Lambda::Function')!;
    delete (template.Resources[adminId]!.Properties!.Environment as { Variables: Record<string, unknown> }).Variables.TABLE_NAME;
    const lone = await startRehearsal({
      cdkOut,
      dynamodbEndpoint: inject('dynamodbEndpoint'),
      only: [ADMIN],
      assembly: r.assembly.withTemplate('Gantry-Api', template),
    });
    try {
      const out = await lone.fn(ADMIN).invoke(restEvent('GET', '/v1/workspaces', { 'x-gw-api-key': 'gw_x' }));
      const text = JSON.stringify(out) + lone.fn(ADMIN).output();
      expect(text).toContain('TABLE_NAME');
    } finally {
      await lone.close();
    }
  });
});

describe('cfn-lint on the synthesized templates', () => {
  it('finds no errors and only acknowledged warnings (or says it is not installed)', async () => {
    const result = await lint;
    if (result.skipped) {
      console.warn(`rehearsal: ${result.skipped}`);
      return;
    }
    expect(result.errors).toEqual([]);
    expect(result.unacknowledged).toEqual([]);
  }, 120_000);
});
