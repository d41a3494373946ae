/**
 * The database hangs (accepts and never answers) or is down (connections refused): health answers
 * `degraded` within a second, cold keys and admin calls answer 503 with Retry-After and a clear
 * message (never 500, never a hang), warm keys keep being served, and all recovers when it is back.
 */
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { startFaultProxy, type FaultMode, type FaultProxy } from '../support/fault-proxy.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

describe.each(['direct', 'lambda'] as const)('database faults (%s mode)', (mode) => {
  let gw: TestGantry;
  let proxy: FaultProxy;
  let mock: MockOpenAI;
  let warmKey: string;

  const chat = (apiKey: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': apiKey,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        authorization: 'Bearer sk-x',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
    });

  // The request timeout is longer than health's second: health must not wait for it.
  beforeAll(async () => {
    proxy = await startFaultProxy(inject('dynamodbEndpoint'));
    [gw, mock] = await Promise.all([
      startGantry(mode, {
        DYNAMODB_ENDPOINT: proxy.url,
        GW_DYNAMODB_CONNECT_TIMEOUT_MS: '200',
        GW_DYNAMODB_REQUEST_TIMEOUT_MS: '1500',
        GW_REQUEST_LOGS: 'OFF',
      }),
      startMockOpenAI(),
    ]);
    warmKey = await gw.workspaceKey();
    expect((await chat(warmKey)).status).toBe(200);
  });
  afterAll(async () => {
    await proxy?.set('pass');
    await Promise.all([gw?.close(), mock?.close()]);
    await proxy?.close();
  });

  it.each(['hang', 'down'] satisfies FaultMode[])(
    'while the database is %s',
    async (fault) => {
      await proxy.set(fault);
      try {
        const health = await fetch(`${gw.url}/v1/health`);
        // Health's own deadline (900 ms) answered, not the table's request timeout (1.5 s): said by the
        // reason, which a busy machine cannot change, rather than by a stopwatch, which it can.
        const reason = fault === 'hang' ? 'not writable (no answer within 900 ms)' : expect.stringMatching(/^not writable \(/);
        expect(await health.json()).toMatchObject({ status: 'degraded', checks: { database: reason } });
        expect(health.status).toBe(503);

        const cold = await chat(`gw_cold-key-${fault}-000000000000000000000000`);
        expect(cold.status).toBe(503);
        expect(cold.headers.get('retry-after')).toBe('5');
        expect(((await cold.json()) as { error: { message: string } }).error.message).toContain('storage is unavailable');

        // The owner key is warm (it created the workspace key); listing configs needs the table.
        const admin = await fetch(`${gw.url}/v1/configs`, { headers: { 'x-gw-api-key': ADMIN_KEY } });
        expect(admin.status).toBe(503);
        expect(admin.headers.get('retry-after')).toBe('5');
        expect(await admin.json()).toMatchObject({ object: 'error', errorCode: 'AB04' });

        const warm = await chat(warmKey);
        expect(warm.status).toBe(200);
        await warm.text();
      } finally {
        await proxy.set('pass');
      }
      expect((await fetch(`${gw.url}/v1/configs`, { headers: { 'x-gw-api-key': ADMIN_KEY } })).status).toBe(200);
      // About 7 s of the table's own timeouts on an idle machine (each call waits for them in turn).
    },
    60_000,
  );
});
