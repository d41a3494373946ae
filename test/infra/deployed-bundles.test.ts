/**
 * The functions as Lambda runs them, outside the repository: every bundle built by
 * infra/lambda-code.ts (as `cdk synth` builds it) is imported in a clean directory with no
 * node_modules anywhere above it, so nothing may come from the runtime's own AWS SDK. Then a
 * deployment is played through on an empty DynamoDB Local table: the bootstrap custom resource
 * (CloudFormation's event, the response PUT to its URL, the key put into Secrets Manager), the admin
 * function with that key, the gateway function against a mock provider, and the log-ingest worker
 * on the SQS messages the gateway sent. The AWS SDK is pointed at DynamoDB Local and at stand-ins
 * through AWS_ENDPOINT_URL_<SERVICE>, with no DYNAMODB_ENDPOINT: the functions believe they are in AWS.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { buildApp } from '../../infra/app-builder.ts';
import { BOOTSTRAP_ENTRY } from '../../infra/constructs/bootstrap.ts';
import { buildLambda } from '../../infra/lambda-code.ts';
import { ADMIN_ENTRY, GATEWAY_ENTRY } from '../../infra/stacks/api-stack.ts';
import { KEY_LIFECYCLE_ENTRY } from '../../infra/stacks/identity-stack.ts';
import { ALERTS_WORKER_ENTRY, USAGE_RESET_ENTRY } from '../../infra/stacks/limits-stack.ts';
import { LOG_EXPORT_ENTRY, LOG_INGEST_ENTRY } from '../../infra/stacks/observability-stack.ts';
import { MCP_SYNC_ENTRY } from '../../infra/stacks/mcp-stack.ts';
import { installAwsLambdaGlobals, PreludeDecoder, ResponseStream, type Prelude } from '../../lambdas/local/awslambda.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { requestEvent } from '../support/apigw-event.ts';
import { startStandIns, type StandIns } from '../support/aws-stand-ins.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { REALTIME_ENTRY } from '../../infra/stacks/realtime-stack.ts';
import { BATCH_ENTRY } from '../../infra/stacks/batches-stack.ts';

const ENTRIES = [
  GATEWAY_ENTRY,
  ADMIN_ENTRY,
  LOG_INGEST_ENTRY,
  LOG_EXPORT_ENTRY,
  ALERTS_WORKER_ENTRY,
  USAGE_RESET_ENTRY,
  KEY_LIFECYCLE_ENTRY,
  BOOTSTRAP_ENTRY,
  REALTIME_ENTRY,
  BATCH_ENTRY,
  MCP_SYNC_ENTRY,
];
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gantry-admin-key-AbCdEf';
const context = { functionName: 'gantry', awsRequestId: 'req-1', getRemainingTimeInMillis: () => 60_000 } as unknown as Context;

type Handler = (...args: unknown[]) => Promise<unknown>;

let root: string;
const bundles = new Map<string, string>();

beforeAll(() => {
  // Outside the repository, so no node_modules of ours can be found from here.
  root = mkdtempSync(path.join(tmpdir(), 'gantry-bundles-'));
  for (const entry of ENTRIES) {
    const outdir = path.join(root, path.dirname(entry).replace(/\//g, '_'));
    buildLambda(entry, outdir);
    bundles.set(entry, path.join(outdir, 'index.mjs'));
  }
}, 180_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('built Lambda bundles', () => {
  it('cover every function of the app', () => {
    const { app } = buildApp({ appProps: { context: { 'aws:cdk:bundling-stacks': [] } }, nag: false });
    // CDK's own upload function (the console's BucketDeployment) is CDK's code, not a bundle of ours.
    const functions = app.node.findAll().filter((c) => c instanceof LambdaFunction && !c.node.path.includes('Custom::CDKBucketDeployment'));
    expect(functions).toHaveLength(ENTRIES.length);
  });

  it('import in a clean directory without node_modules, as the nodejs24.x runtime loads them', () => {
    let dir = root;
    while (dir !== path.dirname(dir)) {
      expect(existsSync(path.join(dir, 'node_modules')), dir).toBe(false);
      dir = path.dirname(dir);
    }
    const probe = path.join(root, 'probe.mjs');
    writeFileSync(
      probe,
      `globalThis.awslambda = { streamifyResponse: (f) => f, HttpResponseStream: { from: (s) => s } };
const m = await import(process.argv[2]);
if (typeof m.handler !== 'function') throw new Error('no handler export');`,
    );
    for (const [entry, file] of bundles) {
      // A fresh process each, with only what Lambda sets: a failing import throws here with its message.
      const env = { PATH: process.env.PATH ?? '', TABLE_NAME: 'gantry', AWS_REGION: 'eu-west-1', LAMBDA_TASK_ROOT: path.dirname(file) };
      expect(() => execFileSync(process.execPath, [probe, pathToFileURL(file).href], { cwd: root, env, stdio: 'pipe' }), entry).not.toThrow();
    }
  });
});

describe('a fresh deployment, played through the built bundles', () => {
  let stand: StandIns;
  let mock: MockOpenAI;
  const saved = { ...process.env };
  const logsQueue = () => `${stand.url}/123456789012/gantry-logs`;
  const load = async (entry: string) => ((await import(pathToFileURL(bundles.get(entry)!).href)) as { handler: Handler }).handler;

  beforeAll(async () => {
    [stand, mock] = await Promise.all([startStandIns(), startMockOpenAI()]);
    const endpoint = inject('dynamodbEndpoint');
    const table = `t-${randomUUID()}`;
    const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await ensureTable(client, table);
    client.destroy();
    for (const k of Object.keys(process.env)) if (k.startsWith('GW_') || k === 'DYNAMODB_ENDPOINT') delete process.env[k];
    Object.assign(process.env, {
      TABLE_NAME: table,
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'AKIDTEST',
      AWS_SECRET_ACCESS_KEY: 'secret-test-key',
      AWS_ENDPOINT_URL_DYNAMODB: endpoint,
      AWS_ENDPOINT_URL_SQS: stand.url,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: stand.url,
      QUEUE_URL_LOGS: logsQueue(),
      GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1',
      LOG_LEVEL: 'SILENT',
    });
    installAwsLambdaGlobals();
  });

  afterAll(async () => {
    process.env = saved;
    await Promise.all([stand.close(), mock.close()]);
  });

  const cfnEvent = (RequestType: 'Create' | 'Update' | 'Delete') => ({
    RequestType,
    ServiceToken: 'arn:aws:lambda:eu-west-1:123456789012:function:bootstrap',
    ResponseURL: `${stand.url}/cfn-response/${randomUUID()}?X-Amz-Signature=abc`,
    StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/Gantry-Identity/1',
    RequestId: randomUUID(),
    LogicalResourceId: 'Bootstrap',
    ResourceType: 'Custom::GantryBootstrap',
    ...(RequestType === 'Create' ? {} : { PhysicalResourceId: 'gantry-bootstrap' }),
    ResourceProperties: { ServiceToken: 'arn', AdminKeySecretId: SECRET_ARN },
  });

  async function admin(method: string, p: string, key: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    const handler = await load(ADMIN_ENTRY);
    const headers = { 'x-gw-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) };
    const out = (await handler(requestEvent(method, p, headers, body ? JSON.stringify(body) : null), context)) as APIGatewayProxyResult;
    const text = out.isBase64Encoded ? Buffer.from(out.body, 'base64').toString('utf8') : out.body;
    return { status: out.statusCode, json: JSON.parse(text) as Record<string, unknown> };
  }

  async function gateway(event: APIGatewayProxyEvent): Promise<{ prelude: Prelude; body: string }> {
    const handler = await load(GATEWAY_ENTRY);
    let prelude: Prelude | undefined;
    const chunks: string[] = [];
    const decoder = new PreludeDecoder(
      (p) => (prelude = p),
      (c) => chunks.push(c.toString('utf8')),
    );
    const stream = new ResponseStream((c) => decoder.push(c));
    await handler(event, stream, context);
    if (!stream.writableFinished) await new Promise((r) => stream.once('finish', r));
    return { prelude: prelude!, body: chunks.join('') };
  }

  it('bootstraps once: the owner key goes to the secret, a second run and an update change nothing', async () => {
    const bootstrap = await load(BOOTSTRAP_ENTRY);
    await bootstrap(cfnEvent('Create'), context);
    expect(stand.cfnResponses.at(-1)).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: 'gantry-bootstrap', Data: { Created: 'true' } });
    const key = stand.secrets.get(SECRET_ARN);
    expect(key).toMatch(/^gw_/);
    // The key is in the secret only: never in the response CloudFormation shows.
    expect(JSON.stringify(stand.cfnResponses)).not.toContain(key);

    await bootstrap(cfnEvent('Update'), context);
    await bootstrap(cfnEvent('Create'), context);
    await bootstrap(cfnEvent('Delete'), context);
    expect(stand.cfnResponses.slice(-3).map((r) => r.Status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
    expect(stand.cfnResponses.slice(-3, -1).map((r) => (r.Data as { Created: string }).Created)).toEqual(['false', 'false']);
    expect(stand.secretPuts).toBe(1);
    expect(stand.secrets.get(SECRET_ARN)).toBe(key);
  });

  it('reports a failure to CloudFormation instead of leaving the stack waiting', async () => {
    const bootstrap = await load(BOOTSTRAP_ENTRY);
    const event = cfnEvent('Create');
    await bootstrap({ ...event, ResourceProperties: { ServiceToken: 'arn' } }, context);
    expect(stand.cfnResponses.at(-1)).toMatchObject({ Status: 'FAILED', Reason: expect.stringContaining('AdminKeySecretId'), RequestId: event.RequestId });
  });

  it('the key from the secret works on the admin routes; the gateway answers and its log is stored by the ingest worker', async () => {
    const ownerKey = stand.secrets.get(SECRET_ARN)!;
    expect((await admin('GET', '/v1/workspaces', 'gw_not-a-key')).status).toBe(401);
    const workspaces = await admin('GET', '/v1/workspaces', ownerKey);
    expect(workspaces.status).toBe(200);
    expect((workspaces.json.data as { slug: string }[]).map((w) => w.slug)).toEqual(['default']);
    const created = await admin('POST', '/v1/api-keys/workspace/service', ownerKey, { name: 'app', workspace_id: 'default', scopes: ['completions.write'] });
    expect(created.status).toBe(200);
    const wsKey = created.json.key as string;

    const chat = await gateway(
      requestEvent(
        'POST',
        '/v1/chat/completions',
        {
          'x-gw-api-key': wsKey,
          'x-gw-provider': 'openai',
          'x-gw-custom-host': `${mock.url}/v1`,
          authorization: 'Bearer sk-test',
          'content-type': 'application/json',
        },
        JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] }),
      ),
    );
    expect(chat.prelude.statusCode).toBe(200);
    expect((JSON.parse(chat.body) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBeTruthy();

    // The log event leaves through SQS after the response.
    for (let i = 0; i < 100 && !stand.messages.get(logsQueue())?.length; i++) await new Promise((r) => setTimeout(r, 50));
    const bodies = stand.messages.get(logsQueue()) ?? [];
    expect(bodies.length).toBeGreaterThan(0);
    const sqsEvent = {
      Records: bodies.map((body, i) => ({ messageId: `m${i}`, body, attributes: { ApproximateReceiveCount: '1' }, eventSource: 'aws:sqs' })),
    } as unknown as SQSEvent;
    const ingest = await load(LOG_INGEST_ENTRY);
    expect(((await ingest(sqsEvent, context)) as SQSBatchResponse).batchItemFailures).toEqual([]);
    const logs = await admin('GET', '/v1/logs?workspace_id=default', ownerKey);
    expect(logs.status).toBe(200);
    expect((logs.json.data as { model?: string }[]).length).toBe(1);
  });
});
