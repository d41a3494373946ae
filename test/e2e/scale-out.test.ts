/**
 * The server on AWS (GW_STORAGE=aws) scaled out: three replicas of the real entry point (the bundle
 * `npm start` and the container run) sharing one DynamoDB Local reached over the network (the table)
 * and stand-ins speaking SQS's JSON protocol (the queues), S3 and KMS. What is created, counted,
 * logged or changed through one replica holds on the others; a replica killed mid-request loses no
 * answered request's log; periodic jobs run under one lease; a missing setting stops the start.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildBundle, LOCAL_BUNDLES } from '../../infra/local-build.ts';
import { freePort } from '../../lambdas/local/dynamodb-local.ts';
import { acquireLease, releaseLease } from '../../lambdas/local/lease.ts';
import { queueUrlVariable } from '../../layers/core/src/ports/queue.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { startFakeAws, type FakeAws } from '../rehearsal/aws.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startSqsStandIn, type SqsStandIn } from '../support/sqs-stand-in.ts';
import { eventually } from '../support/until.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const OWNER_KEY = 'gw_scale-out-owner-key-0123456789abcdefghij';
const QUEUES = ['logs', 'log-exports', 'alerts', 'mcp-sync'];
/** DynamoDB Local keeps one database per access key and region: the replicas use the tests' own. */
const LOCAL_AWS = { AWS_REGION: 'local', AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' };

type Json = Record<string, unknown>;

interface Replica {
  url: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

describe('the server on AWS, three replicas (GW_STORAGE=aws)', () => {
  const ddbEndpoint = inject('dynamodbEndpoint');
  const tableName = `scale-${randomUUID()}`;
  const home = mkdtempSync(path.join(os.tmpdir(), 'gantry-scale-'));
  const children: ChildProcess[] = [];
  let main = '';
  let sqs: SqsStandIn;
  let aws: FakeAws;
  let mock: MockOpenAI;
  let other: MockOpenAI;
  let replicas: Replica[] = [];

  /** The replicas' environment: only what a container on ECS or Kubernetes would be given. */
  const awsEnv = (): Record<string, string> => ({
    PATH: process.env.PATH ?? '',
    // No ~/.aws of the machine running the tests.
    HOME: home,
    GW_STORAGE: 'aws',
    GW_TABLE_NAME: tableName,
    ...LOCAL_AWS,
    AWS_ENDPOINT_URL: aws.url,
    AWS_ENDPOINT_URL_DYNAMODB: ddbEndpoint,
    AWS_ENDPOINT_URL_SQS: sqs.url,
    BLOB_BUCKET: 'gantry-blobs',
    CIPHER_KMS_KEY_ID: 'alias/gantry',
    ...Object.fromEntries(QUEUES.map((q) => [queueUrlVariable(q), sqs.queueUrl(q)])),
    GW_BOOTSTRAP_ADMIN_KEY: OWNER_KEY,
    GW_KEY_CACHE_TTL_SECONDS: '1',
    GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1',
    GW_SHUTDOWN_GRACE_SECONDS: '5',
    LOG_LEVEL: 'WARN',
  });

  function spawnServer(env: Record<string, string>): Omit<Replica, 'url'> {
    const child = spawn(process.execPath, [main], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    return { child, output: () => out, exited };
  }

  async function startReplica(): Promise<Replica> {
    const port = await freePort();
    const r = spawnServer({ ...awsEnv(), PORT: String(port) });
    await eventually(() => {
      if (r.child.exitCode !== null) throw new Error(`replica exited: ${r.output()}`);
      expect(r.output()).toContain('listening');
    }, 30_000);
    return { ...r, url: `http://127.0.0.1:${port}` };
  }

  const admin = async (r: Replica, method: string, p: string, body?: unknown): Promise<{ status: number; json: Json }> => {
    const res = await fetch(r.url + p, {
      method,
      headers: { 'x-gw-api-key': OWNER_KEY, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json };
  };

  const newKey = async (r: Replica, workspace = 'default'): Promise<{ id: string; key: string }> => {
    const res = await admin(r, 'POST', '/v1/api-keys/workspace/service', { name: 'scale', workspace_id: workspace, scopes: ['completions.write'] });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    return { id: res.json.id as string, key: res.json.key as string };
  };

  const chat = (r: Replica, key: string, headers: Record<string, string> = {}, upstream = mock) =>
    fetch(`${r.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${upstream.url}/v1`,
        authorization: 'Bearer sk-x',
        'content-type': 'application/json',
        ...headers,
      },
      body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'Hi' }] }),
    });

  /** The rows `GET /v1/logs` lists for a trace id, through replica `r`. */
  const logRows = async (r: Replica, traceId: string): Promise<Json[]> => {
    const res = await admin(r, 'GET', `/v1/logs?workspace_id=default&trace_id=${traceId}`);
    expect(res.status).toBe(200);
    return res.json.data as Json[];
  };

  beforeAll(async () => {
    const client = new DynamoDBClient({ endpoint: ddbEndpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    [main, sqs, mock, other] = await Promise.all([
      buildBundle(LOCAL_BUNDLES.server!),
      // A short visibility timeout: what a killed replica held comes back within the test.
      startSqsStandIn({ visibilityTimeoutMs: 2_000 }),
      startMockOpenAI(),
      startMockOpenAI(),
      ensureTable(client, tableName).finally(() => client.destroy()),
    ]);
    // S3 and KMS (path-style REST, JSON); DynamoDB goes straight to DynamoDB Local.
    aws = await startFakeAws(ddbEndpoint, { caller: 'gantry-container' });
    // The first start bootstraps the organisation; the other two find it.
    replicas = [await startReplica()];
    replicas.push(...(await Promise.all([startReplica(), startReplica()])));
  }, 120_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await Promise.all([sqs?.close(), aws?.close(), mock?.close(), other?.close()]);
    rmSync(home, { recursive: true, force: true });
  });

  it('starts without DynamoDB Local and fails at start naming every missing setting', async () => {
    for (const r of replicas) expect(r.output()).toContain('storage: aws');
    expect(replicas.map((r) => r.output()).join('')).not.toContain('DynamoDB Local');
    const { GW_TABLE_NAME: _t, BLOB_BUCKET: _b, QUEUE_URL_LOGS: _q, ...partial } = awsEnv();
    const bad = spawnServer({ ...partial, PORT: String(await freePort()) });
    expect(await bad.exited).toBe(1);
    expect(bad.output()).toContain('GW_STORAGE=aws needs GW_TABLE_NAME, BLOB_BUCKET, QUEUE_URL_LOGS');
  });

  it('authenticates a key created through one replica on the others', async () => {
    const { key } = await newKey(replicas[0]!);
    for (const r of replicas) expect((await chat(r, key)).status).toBe(200);
  });

  it('holds a rate limit exactly across the three', async () => {
    // A workspace no replica has read the policies of yet (a warm one serves them up to the TTL stale).
    const ws = await admin(replicas[1]!, 'POST', '/v1/admin/workspaces', { name: 'Rate', slug: 'scale-rate' });
    expect(ws.status, JSON.stringify(ws.json)).toBe(200);
    const { id, key } = await newKey(replicas[1]!, 'scale-rate');
    const policy = await admin(replicas[1]!, 'POST', '/v1/policies/rate-limits', {
      conditions: [{ key: 'api_key', value: id }],
      group_by: [{ key: 'api_key' }],
      workspace_id: 'scale-rate',
      type: 'requests',
      unit: 'rpd',
      value: 5,
    });
    expect(policy.status, JSON.stringify(policy.json)).toBe(200);
    // 12 at once, 4 through each replica: the table's counter admits exactly 5.
    const statuses = await Promise.all(Array.from({ length: 12 }, (_, i) => chat(replicas[i % 3]!, key).then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(7);
  });

  it('lists a log written through any replica once', async () => {
    const { key } = await newKey(replicas[2]!);
    const traces = replicas.map(() => randomUUID());
    await Promise.all(replicas.map(async (r, i) => expect((await chat(r, key, { 'x-gw-trace-id': traces[i]! })).status).toBe(200)));
    for (const traceId of traces) {
      await eventually(async () => expect(await logRows(replicas[0]!, traceId)).toHaveLength(1), 15_000);
      for (const r of replicas.slice(1)) expect(await logRows(r, traceId)).toHaveLength(1);
    }
  });

  it('brings a saved config change to every replica within the key cache TTL', async () => {
    const { key } = await newKey(replicas[0]!);
    const target = (m: MockOpenAI) => ({ provider: 'openai', api_key: 'sk-saved', custom_host: `${m.url}/v1` });
    const created = await admin(replicas[0]!, 'POST', '/v1/configs', { name: 'Scale routing', workspace_id: 'default', config: target(mock) });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const slug = created.json.slug as string;
    const sentTo = async (r: Replica) => {
      const [a, b] = [mock.received.length, other.received.length];
      expect((await chat(r, key, { 'x-gw-config': slug })).status).toBe(200);
      return mock.received.length > a ? 'mock' : other.received.length > b ? 'other' : 'none';
    };
    for (const r of replicas) expect(await sentTo(r)).toBe('mock');
    // The provider key went through KMS (the stand-in) before the table, and comes back through it.
    expect(mock.received.at(-1)?.headers.authorization).toBe('Bearer sk-saved');

    expect((await admin(replicas[1]!, 'PUT', `/v1/configs/${slug}`, { config: target(other) })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_100));
    for (const r of replicas) expect(await sentTo(r)).toBe('other');
  });

  it('runs a periodic job under one lease at a time', async () => {
    const doc = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: ddbEndpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }),
    );
    const table = { doc, tableName };
    const now = Date.now();
    const won = await Promise.all(['a', 'b', 'c'].map((holder) => acquireLease(table, 'test-job', holder, now, 10_000)));
    expect(won.filter(Boolean)).toHaveLength(1);
    const holder = ['a', 'b', 'c'][won.indexOf(true)]!;
    const others = ['a', 'b', 'c'].filter((h) => h !== holder);
    // The holder renews; the others wait for it to expire, or to be given back.
    expect(await acquireLease(table, 'test-job', holder, now + 5_000, 10_000)).toBe(true);
    expect(await acquireLease(table, 'test-job', others[0]!, now + 9_000, 10_000)).toBe(false);
    expect(await acquireLease(table, 'test-job', others[0]!, now + 15_001, 10_000)).toBe(true);
    await releaseLease(table, 'test-job', others[0]!);
    expect(await acquireLease(table, 'test-job', others[1]!, now + 15_002, 10_000)).toBe(true);
    doc.destroy();
  });

  it('loses nothing when a replica is killed mid-request', async () => {
    const { key } = await newKey(replicas[0]!);
    const [a, b, c] = replicas as [Replica, Replica, Replica];
    // Answered requests through every replica, their log events on the queue or being ingested.
    const answered = Array.from({ length: 9 }, () => randomUUID());
    await Promise.all(answered.map(async (t, i) => expect((await chat(replicas[i % 3]!, key, { 'x-gw-trace-id': t })).status).toBe(200)));
    // One request held by the provider while its replica is killed.
    let release = () => {};
    other.queue.push({ kind: 'hold', until: new Promise<void>((r) => (release = r)) });
    const heldTrace = randomUUID();
    const before = other.received.length;
    const held = chat(c, key, { 'x-gw-trace-id': heldTrace }, other).then(
      (r) => r.text().then(() => r.status),
      () => 'cut',
    );
    await eventually(() => expect(other.received.length).toBe(before + 1));
    c.child.kill('SIGKILL');
    expect(await c.exited).toBe(null);
    expect(await held).toBe('cut');
    release();
    // The client retries on a survivor: answered there, and logged once.
    expect((await chat(a, key, { 'x-gw-trace-id': heldTrace })).status).toBe(200);
    for (const t of [...answered, heldTrace]) {
      await eventually(async () => expect(await logRows(b, t)).toHaveLength(1), 15_000);
    }
    // Whatever the killed replica had received came back to the survivors and was deleted.
    await eventually(() => expect(sqs.depth('logs')).toBe(0), 10_000);
    // The survivors stop like a service: in-flight work done, pollers stopped, exit 0.
    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);
  });
});
