/**
 * The IAM check in the end-to-end suite (issue 35): the local server in 'lambda' mode (the
 * functions' handlers, as on AWS) with every DynamoDB call sent through the rehearsal's recording
 * stand-in, and each recorded call judged by the synthesized role policies of the function that
 * serves it on AWS. One local server per function (the gateway's, the admin function's, the
 * bootstrap's), each with its own stand-in, on one table named as the template names it; admin
 * paths go to the admin server, the rest to the gateway's, as API Gateway routes them.
 *
 * What it covers: the item and index actions on the table the end-to-end flows below use. What it
 * does not: the local adapters (queues, blobs, KMS) make no AWS call here; the rehearsal
 * (test/infra/rehearsal.test.ts) checks those calls from the synthesized functions themselves.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { startLocalServer, type LocalServer } from '../../lambdas/local/server.ts';
import { Assembly, type Template } from '../rehearsal/assembly.ts';
import { startFakeAws, type FakeAws } from '../rehearsal/aws.ts';
import { checkCalls } from '../rehearsal/iam.ts';
import { createTables, synthesize } from '../rehearsal/rehearsal.ts';
import { createTestDepsOn } from '../support/deps.ts';
import { ADMIN_KEY } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

const FUNCTIONS = { gateway: 'Gantry-Api/Gateway', admin: 'Gantry-Api/Admin', bootstrap: 'Gantry-Identity/BootstrapWorker' } as const;
type Fn = keyof typeof FUNCTIONS;

let cdkOut: string;
let assembly: Assembly;
let mock: MockOpenAI;
const stand = {} as Record<Fn, { aws: FakeAws; deps: CoreDeps; server?: LocalServer; id: string }>;

const call = async (fn: 'gateway' | 'admin', method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(stand[fn].server!.url + p, {
    method,
    headers: { 'x-gw-api-key': ADMIN_KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
};

beforeAll(async () => {
  // The templates only (no bundles): the policies and the table's name are what this test reads.
  cdkOut = synthesize({}, { bundle: false });
  assembly = new Assembly(cdkOut, randomBytes(4).toString('hex'));
  const dynamodb = inject('dynamodbEndpoint');
  await createTables(assembly, dynamodb);
  const [tableStack, tableId] = [...assembly.stacks.values()].flatMap((s) =>
    Object.entries(s.template.Resources)
      .filter(([, r]) => r.Type === 'AWS::DynamoDB::Table')
      .map(([id]) => [s.name, id] as const),
  )[0]!;
  const table = assembly.physicalName(tableStack, tableId);
  const fns = assembly.functions();
  for (const fn of Object.keys(FUNCTIONS) as Fn[]) {
    const id = fns.find((f) => f.id.startsWith(FUNCTIONS[fn]))!.id;
    const aws = await startFakeAws(dynamodb, { caller: id });
    // The table as the template names it; every call through this function's stand-in.
    stand[fn] = { aws, id, deps: createTestDepsOn(table, { DYNAMODB_ENDPOINT: aws.url, AWS_REGION: 'us-east-1' }) };
  }
  await ensureBootstrap(stand.bootstrap.deps, ADMIN_KEY);
  [stand.gateway.server, stand.admin.server, mock] = await Promise.all([
    startLocalServer({ deps: stand.gateway.deps, mode: 'lambda' }),
    startLocalServer({ deps: stand.admin.deps, mode: 'lambda' }),
    startMockOpenAI(),
  ]);
}, 120_000);

afterAll(async () => {
  for (const s of Object.values(stand)) {
    await s.server?.close();
    s.deps.upstream.close();
    await s.aws.close();
  }
  await mock?.close();
  if (cdkOut) rmSync(path.dirname(cdkOut), { recursive: true, force: true });
});

describe('the IAM check of the end-to-end flows', () => {
  it('allows every DynamoDB call the gateway, admin and bootstrap handlers make, by the policies of the function that makes it', async () => {
    // Admin flows: keys, configs, workspaces, users, logs.
    const key = await call('admin', 'POST', '/v1/api-keys/workspace/service', { name: 'iam', workspace_id: 'default', scopes: ['completions.write'] });
    expect(key.status, key.text).toBe(200);
    const config = await call('admin', 'POST', '/v1/configs', { name: 'iam', workspace_id: 'default', config: { provider: 'openai' } });
    expect(config.status, config.text).toBe(200);
    for (const p of ['/v1/workspaces', '/v1/api-keys', '/v1/configs', '/v1/admin/users', '/v1/logs?workspace_id=default']) {
      expect((await call('admin', 'GET', p)).status, p).toBe(200);
    }

    // Gateway flows: a chat completion, buffered and streamed, and a call refused for a bad key.
    const gatewayHeaders = {
      'x-gw-api-key': String((JSON.parse(key.text) as { key: string }).key),
      'x-gw-provider': 'openai',
      'x-gw-custom-host': `${mock.url}/v1`,
      authorization: 'Bearer sk-test',
    };
    const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] };
    expect((await call('gateway', 'POST', '/v1/chat/completions', chat, gatewayHeaders)).status).toBe(200);
    mock.queue.push({ kind: 'stream', chunks: ['Hel', 'lo'], usage: true });
    expect((await call('gateway', 'POST', '/v1/chat/completions', { ...chat, stream: true }, gatewayHeaders)).text).toContain('[DONE]');
    expect((await call('gateway', 'POST', '/v1/chat/completions', chat, { ...gatewayHeaders, 'x-gw-api-key': 'gw_not-a-key' })).status).toBe(401);

    const denied: string[] = [];
    const fns = new Map(assembly.functions().map((f) => [f.id, f]));
    for (const s of Object.values(stand)) {
      expect(s.aws.calls.length, `${s.id} made no call through its stand-in`).toBeGreaterThan(0);
      expect(s.aws.refused).toEqual([]);
      denied.push(...checkCalls(fns.get(s.id)!, s.aws.calls).denied);
    }
    expect(denied).toEqual([]);
  });

  it('fails naming the call and the policy when the admin function loses dynamodb:Query', () => {
    const template = structuredClone(assembly.stacks.get('Gantry-Api')!.template) as Template;
    const policyId = Object.keys(template.Resources).find((id) => id.startsWith('AdminRoleDefaultPolicy'))!;
    const doc = template.Resources[policyId]!.Properties!.PolicyDocument as { Statement: { Action: string | string[] }[] };
    for (const st of doc.Statement) st.Action = [st.Action].flat().filter((a) => a !== 'dynamodb:Query');
    const admin = assembly
      .withTemplate('Gantry-Api', template)
      .functions()
      .find((f) => f.id === stand.admin.id)!;
    const denied = checkCalls(admin, stand.admin.aws.calls).denied.join('\n');
    expect(denied).toMatch(/Gantry-Api\/Admin\S* calls dynamodb:Query on arn:aws:dynamodb:us-east-1:123456789012:table\/\S+/);
    expect(denied).toContain(`Gantry-Api/${policyId}`);
  });
});
