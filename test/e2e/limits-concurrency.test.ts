/**
 * Limits hold exactly across instances: four Gantry servers (two direct, two through the Lambda
 * handlers), each with its own caches, share one DynamoDB Local table, as Lambda instances share
 * the table. 200 requests fired at once against a limit of 50 let exactly 50 through, for a
 * requests limit, a tokens limit and a cost budget.
 *
 * The admitted requests are held before the provider call until every request has been decided, so
 * no settlement can free room during the burst: what is tested is the reservation alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import type { GatewayHook } from '../../layers/core/src/kernel/lifecycle.ts';
import { startLocalServer, type LocalServer } from '../../lambdas/local/server.ts';
import { createTestDeps, createTestDepsOn } from '../support/deps.ts';
import { ADMIN_KEY } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

type Json = Record<string, unknown>;

const TOTAL = 200;
const LIMIT = 50;

interface Instance {
  deps: CoreDeps;
  server: LocalServer;
}

describe('limits under concurrency across instances', () => {
  let mock: MockOpenAI;
  const instances: Instance[] = [];
  let admitted = 0;
  let refused = 0;
  let holding = false;
  let release: () => void = () => undefined;
  let allDecided: Promise<void> = Promise.resolve();

  /** After the limits hook: holds admitted requests until all TOTAL are decided. */
  const barrier: GatewayHook = {
    name: 'test-barrier',
    async admit() {
      if (!holding) return;
      admitted++;
      if (admitted + refused >= TOTAL) release();
      await allDecided;
    },
  };

  const admin = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const res = await fetch(instances[0]!.server.url + path, {
      method,
      headers: { 'x-gw-api-key': ADMIN_KEY, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as Json;
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };

  /** Fires TOTAL requests at once, spread over the instances; answers the statuses. */
  const burst = async (key: string, body: Json): Promise<number[]> => {
    admitted = 0;
    refused = 0;
    allDecided = new Promise<void>((r) => (release = r));
    holding = true;
    // Every instance reads the new policy now, as it would once its cache TTL ran out.
    for (const i of instances) i.deps.limits.policies.invalidate();
    try {
      return await Promise.all(
        Array.from({ length: TOTAL }, async (_, n) => {
          const target = instances[n % instances.length]!;
          const res = await fetch(`${target.server.url}/v1/chat/completions`, {
            method: 'POST',
            headers: {
              'x-gw-api-key': key,
              'x-gw-provider': 'openai',
              'x-gw-custom-host': `${mock.url}/v1`,
              authorization: 'Bearer sk-x',
              'content-type': 'application/json',
            },
            body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'Hi' }], ...body }),
          });
          if (res.status !== 200) {
            refused++;
            if (admitted + refused >= TOTAL) release();
          }
          await res.text();
          return res.status;
        }),
      );
    } finally {
      holding = false;
      release();
    }
  };

  const newKey = async (): Promise<{ id: string; key: string }> => {
    const res = await admin('POST', '/v1/api-keys/workspace/service', { name: 'burst', workspace_id: 'default', scopes: ['completions.write'] });
    return { id: res.id as string, key: res.key as string };
  };

  const count = (statuses: number[]) => statuses.reduce<Record<number, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});

  beforeAll(async () => {
    mock = await startMockOpenAI();
    const first = await createTestDeps();
    await ensureBootstrap(first, ADMIN_KEY);
    const all = [first, ...[1, 2, 3].map(() => createTestDepsOn(first.config.tableName))];
    for (const [n, deps] of all.entries()) {
      deps.gatewayHooks.push(barrier);
      instances.push({ deps, server: await startLocalServer({ deps, mode: n % 2 === 0 ? 'direct' : 'lambda' }) });
    }
  });
  afterAll(async () => {
    await Promise.all(
      instances.map(async (i) => {
        await i.server.close();
        i.deps.upstream.close();
      }),
    );
    await mock?.close();
  });

  it('lets exactly 50 of 200 through a requests limit of 50', async () => {
    const k = await newKey();
    await admin('POST', '/v1/policies/rate-limits', {
      conditions: [{ key: 'api_key', value: k.id }],
      group_by: [{ key: 'api_key' }],
      workspace_id: 'default',
      type: 'requests',
      unit: 'rpd',
      value: LIMIT,
    });
    const statuses = await burst(k.key, {});
    expect(count(statuses)).toEqual({ 200: LIMIT, 429: TOTAL - LIMIT });
  });

  it('lets exactly 50 of 200 through a tokens limit of 50 requests’ estimates', async () => {
    const k = await newKey();
    // Each request reserves 1 prompt token + max_tokens 3 = 4.
    await admin('POST', '/v1/policies/rate-limits', {
      conditions: [{ key: 'api_key', value: k.id }],
      group_by: [{ key: 'api_key' }],
      workspace_id: 'default',
      type: 'tokens',
      unit: 'rpd',
      value: LIMIT * 4,
    });
    const statuses = await burst(k.key, { max_tokens: 3 });
    expect(count(statuses)).toEqual({ 200: LIMIT, 429: TOTAL - LIMIT });
  });

  it('lets exactly 50 of 200 through a cost budget of 50 requests’ estimates', async () => {
    const k = await newKey();
    // An unpriced model at the default $10 / $30 per million: 1 * 10 + 3 * 30 = 100 µ$ a request.
    await admin('POST', '/v1/policies/usage-limits', {
      conditions: [{ key: 'api_key', value: k.id }],
      group_by: [{ key: 'api_key' }],
      workspace_id: 'default',
      type: 'cost',
      credit_limit: (LIMIT * 100) / 1e6,
    });
    const statuses = await burst(k.key, { max_tokens: 3 });
    expect(count(statuses)).toEqual({ 200: LIMIT, 402: TOTAL - LIMIT });
  });
});
