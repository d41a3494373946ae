/**
 * No custom host reaches Gantry itself, whatever GW_TRUSTED_CUSTOM_HOSTS says: with the bare
 * `127.0.0.1` operators write for local models, a workspace key aims the passthrough and a chat
 * config's custom_host at DynamoDB Local's port and at Gantry's own listener, in every spelling of
 * this machine's addresses. Each is refused with a 400 naming the field and the host, DynamoDB Local
 * receives nothing (a CreateTable it would obey leaves no table) and Gantry no second request;
 * a model server on another loopback port still answers.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayHook, GatewayRecord } from '../../layers/core/src/kernel/lifecycle.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { until } from '../support/until.ts';

/** Headers and body of a DynamoDB call (DynamoDB Local accepts any signature and any path). */
const dynamo = (action: string) => ({
  'x-amz-target': `DynamoDB_20120810.${action}`,
  'content-type': 'application/x-amz-json-1.0',
  authorization: 'AWS4-HMAC-SHA256 Credential=local/20250101/local/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
});

const createTable = (name: string) =>
  JSON.stringify({
    TableName: name,
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    BillingMode: 'PAY_PER_REQUEST',
  });

/** Every way to write "this machine" in a URL, on `port`: loopback, unspecified, mapped, this machine's interfaces, names. */
function spellings(port: number): string[] {
  const interfaces = Object.values(os.networkInterfaces())
    .flatMap((list) => list ?? [])
    .filter((i) => !i.internal && !i.address.includes('%'))
    .map((i) => (i.family === 'IPv6' ? `[${i.address}]` : i.address));
  const hosts = [
    '127.0.0.1',
    '127.0.0.2',
    '127.1.2.3',
    '0.0.0.0',
    '[::1]',
    '[::]',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '[0:0:0:0:0:ffff:7f00:1]',
    'localhost',
    'gantry.localhost',
    ...interfaces,
  ];
  return [
    ...hosts.map((h) => `http://${h}:${port}`),
    // Another spelling of the port, a path that makes the provider path a query (so the call lands on "/").
    `http://127.0.0.1:0${port}/`,
    `http://127.0.0.1:${port}/?q=`,
    // Numeric spellings WHATWG would read as 127.0.0.1.
    `http://2130706433:${port}`,
    `http://0177.0.0.1:${port}`,
    `http://0x7f.0.0.1:${port}`,
    `http://0x7f000001:${port}`,
    `http://127.1:${port}`,
  ];
}

describe.each(['direct', 'lambda'] as const)("Gantry's own ports (%s mode)", (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  let ddb: URL;
  const records: GatewayRecord[] = [];
  const hook: GatewayHook = { name: 'recorder', complete: (r) => void records.push(r) };
  const probeTables: string[] = [];

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode, { GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1' }), startMockOpenAI()]);
    key = await gw.workspaceKey();
    ddb = new URL(String(gw.deps.config.dynamodbEndpoint));
    gw.deps.gatewayHooks.push(hook);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    records.length = 0;
  });

  /** The table names DynamoDB Local holds, read directly: what a probe that got through would have left. */
  async function tables(): Promise<string[]> {
    const res = await fetch(ddb.origin, { method: 'POST', headers: dynamo('ListTables'), body: '{}' });
    expect(res.status).toBe(200);
    return ((await res.json()) as { TableNames: string[] }).TableNames;
  }

  /** A passthrough call aimed at `host`: DynamoDB's own method, headers and body, a fresh table name. */
  function passthrough(host: string): Promise<Response> {
    const table = `own-port-probe-${randomUUID()}`;
    probeTables.push(table);
    return fetch(`${gw.url}/v1/probe`, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': host, ...dynamo('CreateTable') },
      body: createTable(table),
    });
  }

  /** A chat completion whose config's target names `host`. */
  function chat(host: string): Promise<Response> {
    return fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-config': JSON.stringify({ provider: 'openai', api_key: 'sk-x', custom_host: host }),
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
    });
  }

  async function expectRefused(res: Response, param: string, host: string): Promise<void> {
    const body = (await res.json()) as { error: { param: string; message: string } };
    expect([res.status, body.error.param], `${host}: ${body.error.message}`).toEqual([400, param]);
    // The refusal names the host as written (WHATWG's spelling for IPv6) or the form it must take.
    expect(body.error.message, host).toMatch(/:\d+ is one of this service's own ports|dotted-decimal/);
  }

  it('the DynamoDB call the probes send works when sent straight to DynamoDB Local (so a probe that got through would show)', async () => {
    expect(Array.isArray(await tables())).toBe(true);
  });

  it("refuses the passthrough to DynamoDB Local's port in every spelling; DynamoDB Local receives nothing", async () => {
    for (const host of spellings(Number(ddb.port))) await expectRefused(await passthrough(host), 'x-gw-custom-host', host);
    const left = (await tables()).filter((t) => probeTables.includes(t));
    expect(left).toEqual([]);
  });

  it("refuses the passthrough and a config's custom_host to Gantry's own listener; Gantry gets no second request", async () => {
    const hosts = spellings(gw.server.port).map((h) => `${h}${h.endsWith('/') || h.includes('?') ? '' : '/v1'}`);
    for (const host of hosts) await expectRefused(await passthrough(host), 'x-gw-custom-host', host);
    for (const host of hosts) await expectRefused(await chat(host), 'config.custom_host', host);
    await until(() => (records.length >= hosts.length * 2 ? true : undefined), 'a record of every request');
    // One record per request the test sent: none came back in through the listener.
    expect(records).toHaveLength(hosts.length * 2);
    expect(records.every((r) => r.status === 400)).toBe(true);
  });

  it('a model server on another loopback port is still reached through the bare trusted 127.0.0.1', async () => {
    const res = await chat(`${mock.url}/v1`);
    expect(res.status).toBe(200);
    expect(mock.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(mock.received).toHaveLength(1);
  });
});
