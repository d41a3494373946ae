/**
 * A key pasted into the wrong field never reaches an audit entry or a request log: a gateway key
 * and a provider key in `workspace_id`, other id fields, path ids, query parameters, metadata, the
 * trace and span headers and the User-Agent. Admin requests that name a workspace by a key are
 * refused; what is stored of every request (read back through the API, and the whole table
 * scanned) holds no trace of either key.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { waitFor } from '../support/observability.ts';

type Json = Record<string, unknown>;

const PROVIDER_KEY = 'sk-proj-pastedProviderKey0123456789abcdef';

describe.each(['direct', 'lambda'] as const)('keys pasted into the wrong field (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  /** A real gateway key of the workspace: the paste an operator would make. */
  let gatewayKey: string;
  const start = new Date(Date.now() - 60_000).toISOString();

  /** What must not appear: each key whole, and a distinctive part of it. */
  const expectNoTrace = (stored: unknown, where: string) => {
    const text = JSON.stringify(stored);
    for (const secret of [gatewayKey, PROVIDER_KEY]) {
      expect(text, `${where} holds ${secret.slice(0, 6)}…`).not.toContain(secret);
      expect(text, `${where} holds part of ${secret.slice(0, 6)}…`).not.toContain(secret.slice(4, 24));
    }
  };

  const admin = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(gw.url + path, {
      method,
      headers: { 'x-gw-api-key': ADMIN_KEY, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json, requestId: res.headers.get('x-gw-request-id') ?? '' };
  };

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    gatewayKey = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  it('admin requests naming a workspace by a key are refused; their audit entries keep no trace of it', async () => {
    const requestIds: string[] = [];
    for (const pasted of [gatewayKey, PROVIDER_KEY]) {
      const sent = [
        await admin('POST', '/v1/api-keys/workspace/service', {
          name: 'pasted',
          workspace_id: pasted,
          scopes: ['completions.write'],
          metadata: { note: pasted },
        }),
        await admin('POST', '/v1/configs', { name: 'pasted', workspace_id: pasted, config: { provider: 'openai' } }),
        await admin('POST', `/v1/virtual-keys?workspace_id=${encodeURIComponent(pasted)}&note=${encodeURIComponent(pasted)}`, {
          name: 'pasted',
          provider: 'openai',
          key: 'x',
          workspace_id: pasted,
        }),
        await admin('PUT', `/v1/api-keys/${encodeURIComponent(pasted)}`, { name: 'renamed' }, { 'user-agent': `curl ${pasted}`, 'x-forwarded-for': pasted }),
        await admin('DELETE', `/v1/configs/${encodeURIComponent(pasted)}?workspace_id=${encodeURIComponent(pasted)}`),
      ];
      for (const [i, reply] of sent.entries()) {
        expect(reply.status, `request ${i}: ${JSON.stringify(reply.json)}`).toBeGreaterThanOrEqual(400);
        expect(reply.status, `request ${i}: ${JSON.stringify(reply.json)}`).toBeLessThan(500);
        requestIds.push(reply.requestId);
      }
    }
    const end = new Date(Date.now() + 60_000).toISOString();
    const listed = await admin('GET', `/v1/audit-logs?start_time=${start}&end_time=${end}&page_size=100`);
    expect(listed.status).toBe(200);
    const entries = (listed.json.data as Json[]).filter((e) => requestIds.includes(String(e.request_id)));
    // Every one of these requests has its entry (refused ones too), and none holds the key.
    expect(entries.length).toBe(requestIds.length);
    expect(entries.filter((e) => e.workspace_id !== null && e.workspace_id !== undefined).length).toBeGreaterThan(0);
    expectNoTrace(entries, 'the audit log');
    expect(entries.some((e) => String(e.workspace_id).includes('****'))).toBe(true);
  });

  it('a gateway request with the keys in its trace and span headers, metadata, body user and path logs no trace of them', async () => {
    const headers = {
      'x-gw-api-key': gatewayKey,
      'x-gw-provider': 'openai',
      'x-gw-custom-host': `${mock.url}/v1`,
      authorization: 'Bearer sk-x',
      'content-type': 'application/json',
      'x-gw-trace-id': `trace-${gatewayKey}`,
      'x-gw-span-id': PROVIDER_KEY,
      'x-gw-parent-span-id': gatewayKey,
      'x-gw-span-name': `span ${PROVIDER_KEY}`,
      'x-gw-metadata': JSON.stringify({
        _user: gatewayKey,
        _environment: PROVIDER_KEY,
        _organisation: gatewayKey,
        note: PROVIDER_KEY,
        [PROVIDER_KEY]: 'as a name',
      }),
    };
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: 'gpt-4o-mini', user: PROVIDER_KEY, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(chat.status).toBe(200);
    await chat.text();
    // A key where a saved config's id goes: refused, and logged.
    const config = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...headers, 'x-gw-config': gatewayKey },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(config.status).toBeGreaterThanOrEqual(400);
    expect(config.status).toBeLessThan(500);
    await config.text();
    // A key in the passthrough's path and query.
    const passthrough = await fetch(`${gw.url}/v1/files/${PROVIDER_KEY}/content?key=${gatewayKey}`, { headers });
    await passthrough.text();

    for (const res of [chat, config, passthrough]) {
      const id = String(res.headers.get('x-gw-log-id'));
      const log = await waitFor(gw.deps, async () => {
        const found = await gw.admin('GET', `/v1/logs/${id}`);
        return found.status === 200 ? found.json : undefined;
      });
      expect(log.id).toBe(id);
      expectNoTrace(log, `the log of ${String(log.path)}`);
    }
  });

  it('the table as a whole holds no trace of either key', async () => {
    const items: unknown[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await gw.deps.repos.table.doc.send(new ScanCommand({ TableName: gw.deps.config.tableName, ExclusiveStartKey: start }));
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    expect(items.length).toBeGreaterThan(10);
    expectNoTrace(items, 'the table');
  });
});
