/**
 * A rate limits policy in approximate mode (`mode: "approximate"`): each instance leases units of
 * the shared counter and spends them in memory. Two Gantry servers, each with its own deps (as two
 * Lambda instances), share one DynamoDB Local table: together they never admit more than the limit;
 * one alone admits exactly the limit, with one counter update per lease rather than per request;
 * the admin API validates and shows the mode.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { startLocalServer, type LocalServer } from '../../lambdas/local/server.ts';
import { createTestDeps, createTestDepsOn } from '../support/deps.ts';
import { ADMIN_KEY } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

type Json = Record<string, unknown>;

const RATE = '/v1/policies/rate-limits';

interface Instance {
  deps: CoreDeps;
  server: LocalServer;
  /** Counter updates this instance's limits made (reservations and leases). */
  reserves: number;
}

describe('rate limits in approximate mode', () => {
  let mock: MockOpenAI;
  const instances: Instance[] = [];

  const admin = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }> => {
    const res = await fetch(instances[0]!.server.url + path, {
      method,
      headers: { 'x-gw-api-key': ADMIN_KEY, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Json };
  };

  const chat = async (target: Instance, key: string): Promise<number> => {
    const res = await fetch(`${target.server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        authorization: 'Bearer sk-x',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    await res.text();
    return res.status;
  };

  /** A new key and a policy on it; every instance reads the policy now. */
  const limitedKey = async (policy: Json): Promise<string> => {
    const key = await admin('POST', '/v1/api-keys/workspace/service', { name: 'approx', workspace_id: 'default', scopes: ['completions.write'] });
    const created = await admin('POST', RATE, {
      conditions: [{ key: 'api_key', value: key.json.id }],
      group_by: [{ key: 'api_key' }],
      workspace_id: 'default',
      type: 'requests',
      unit: 'rpd',
      ...policy,
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    for (const i of instances) {
      i.deps.limits.policies.invalidate();
      i.reserves = 0;
    }
    return key.json.key as string;
  };

  const count = (statuses: number[]) => statuses.reduce<Record<number, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});

  beforeAll(async () => {
    mock = await startMockOpenAI();
    const first = await createTestDeps();
    await ensureBootstrap(first, ADMIN_KEY);
    for (const deps of [first, createTestDepsOn(first.config.tableName)]) {
      const instance: Instance = { deps, server: await startLocalServer({ deps, mode: 'direct' }), reserves: 0 };
      const repo = deps.limits.repo;
      const reserve = repo.reserve.bind(repo);
      repo.reserve = (...args) => (instance.reserves++, reserve(...args));
      instances.push(instance);
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

  it('never admits more than the limit across two instances, sequential or at once', async () => {
    // Leases of 7 do not divide 30: the last lease of the window takes only what is left.
    const key = await limitedKey({ value: 30, mode: 'approximate', lease_size: 7 });
    const sequential = [];
    for (let n = 0; n < 20; n++) sequential.push(await chat(instances[n % 2]!, key));
    const burst = await Promise.all(Array.from({ length: 40 }, (_, n) => chat(instances[n % 2]!, key)));
    const all = count([...sequential, ...burst]);
    expect(all[200] ?? 0).toBeLessThanOrEqual(30);
    expect((all[200] ?? 0) + (all[429] ?? 0)).toBe(60);
    // Each instance leased before it first admitted: 20 sequential requests took a few leases, not 20 updates.
    expect(count(sequential)[200]).toBe(20);
  });

  it('admits exactly the limit on one instance, one counter update per lease', async () => {
    const key = await limitedKey({ value: 50, mode: 'approximate', lease_size: 10 });
    const one = instances[0]!;
    const statuses = [];
    for (let n = 0; n < 60; n++) statuses.push(await chat(one, key));
    expect(count(statuses)).toEqual({ 200: 50, 429: 10 });
    // 5 leases of 10, then each refused request finds the counter full with one update.
    expect(one.reserves).toBe(5 + 10);
    expect(instances[1]!.reserves).toBe(0);
  });

  it('admits exactly the limit when the lease does not divide it', async () => {
    const key = await limitedKey({ value: 25, mode: 'approximate', lease_size: 10 });
    const statuses = [];
    for (let n = 0; n < 30; n++) statuses.push(await chat(instances[0]!, key));
    expect(count(statuses)).toEqual({ 200: 25, 429: 5 });
  });

  it('answers the headers and the 429 of a refused request as in exact mode', async () => {
    const key = await limitedKey({ value: 2, mode: 'approximate', lease_size: 5 });
    const res = [];
    for (let n = 0; n < 3; n++) {
      res.push(
        await fetch(`${instances[0]!.server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            'x-gw-api-key': key,
            'x-gw-provider': 'openai',
            'x-gw-custom-host': `${mock.url}/v1`,
            authorization: 'Bearer sk-x',
            'content-type': 'application/json',
          },
          body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'Hi' }] }),
        }),
      );
    }
    expect(res.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(res[0]!.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    expect(res[1]!.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(res[2]!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await res[2]!.text()).toContain('Limit 2, Used 2');
  });

  it('keeps the exact mode a counter update per request', async () => {
    const key = await limitedKey({ value: 5 });
    const statuses = [];
    for (let n = 0; n < 7; n++) statuses.push(await chat(instances[n % 2]!, key));
    expect(count(statuses)).toEqual({ 200: 5, 429: 2 });
    expect(instances[0]!.reserves + instances[1]!.reserves).toBe(7);
  });

  it('validates mode and lease_size, naming the field, and shows them', async () => {
    const base = {
      conditions: [{ key: 'workspace_id', value: 'default' }],
      group_by: [{ key: 'api_key' }],
      workspace_id: 'default',
      type: 'requests',
      unit: 'rpm',
      value: 10,
    };
    const problems = async (body: Json, path = RATE, method = 'POST') => {
      const res = await admin(method, path, body);
      expect(res.status, JSON.stringify(res.json)).toBe(400);
      return (res.json.errors as { path: string; message: string }[]).map((e) => `${e.path}: ${e.message}`);
    };
    expect(await problems({ ...base, mode: 'fast' })).toEqual(['mode: must be one of exact, approximate']);
    expect(await problems({ ...base, mode: 'approximate', lease_size: 0 })).toEqual(['lease_size: must be at least 1']);
    expect(await problems({ ...base, mode: 'approximate', lease_size: 2.5 })).toEqual(['lease_size: must be an integer']);
    expect(await problems({ ...base, lease_size: 5 })).toEqual(['lease_size: needs mode approximate']);

    const exact = await admin('POST', RATE, base);
    const id = exact.json.id as string;
    expect((await admin('GET', `${RATE}/${id}`)).json).toMatchObject({ mode: 'exact', lease_size: null });
    expect(await problems({ lease_size: 5 }, `${RATE}/${id}`, 'PUT')).toEqual(['lease_size: needs mode approximate']);
    expect((await admin('PUT', `${RATE}/${id}`, { mode: 'approximate' })).status).toBe(200);
    expect((await admin('GET', `${RATE}/${id}`)).json).toMatchObject({ mode: 'approximate', lease_size: 10 });
    expect((await admin('PUT', `${RATE}/${id}`, { lease_size: 3 })).status).toBe(200);
    expect((await admin('GET', `${RATE}/${id}`)).json).toMatchObject({ mode: 'approximate', lease_size: 3 });
    expect((await admin('PUT', `${RATE}/${id}`, { mode: 'exact' })).status).toBe(200);
    expect((await admin('GET', `${RATE}/${id}`)).json).toMatchObject({ mode: 'exact', lease_size: null });
  });
});
