/**
 * Rate limits and budgets enforced at the gateway, end to end through the local server (directly
 * and through the real Lambda handlers) against the mock provider: refusals before any provider
 * call with OpenAI's error shape and rate-limit headers, counters per group and window, token
 * reservations settled to the real usage (streams cancelled half way included), cache hits free,
 * budgets exhausted and re-activated by a raised limit, alerts mailed once, and the feature flags.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import type { OutboxMailer } from '../../layers/core/src/ports/local/outbox-mailer.ts';
import { ALERTS_QUEUE } from '../../layers/core/src/policy/limits/alerts.ts';
import { entityIdOf } from '../../layers/core/src/policy/limits/match.ts';
import { rateWindow, type RateUnit } from '../../layers/core/src/policy/limits/windows.ts';
import { startLocalLimitsWorkers } from '../../layers/core/src/policy/limits/workers.ts';
import { workspaceBudgetCounter } from '../../layers/core/src/policy/limits/hook.ts';
import { rateCounterPk, type RateLimitType } from '../../layers/core/src/store/limits.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { eventually as retry } from '../support/until.ts';
import { workspaceRecord } from '../support/records.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

type Json = Record<string, unknown>;

const RATE = '/v1/policies/rate-limits';
const USAGE = '/v1/policies/usage-limits';
/** 2026-01-01T00:00:05Z: well inside every window, so nothing rolls over unless a test moves the clock. */
const START = Date.UTC(2026, 0, 1, 0, 0, 5);

/** Polls until `check` passes: settlement runs after the response, off the request path. */
function eventually(gw: TestGantry, check: () => Promise<void>): Promise<void> {
  return retry(async () => {
    await gw.deps.limits.hook.flush();
    await check();
  });
}

describe.each(['direct', 'lambda'] as const)('limits at the gateway (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let stopWorkers: () => void;
  const clock = new ManualClock(START);

  const newKey = async (extra: Json = {}): Promise<{ id: string; key: string }> => {
    const res = await gw.admin('POST', '/v1/api-keys/workspace/service', { name: 'limits', workspace_id: 'default', scopes: ['completions.write'], ...extra });
    if (res.status !== 200) throw new Error(`key: ${res.status} ${JSON.stringify(res.json)}`);
    return { id: res.json.id as string, key: res.json.key as string };
  };

  const chat = (key: string, body: Json = {}, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        authorization: 'Bearer sk-x',
        'content-type': 'application/json',
        ...headers,
      },
      body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'Hi' }], ...body }),
      ...(signal ? { signal } : {}),
    });

  /** A policy that counts only this key's requests, per key. */
  const ratePolicy = async (keyId: string, patch: Json): Promise<string> => {
    const res = await gw.admin('POST', RATE, {
      conditions: [{ key: 'api_key', value: keyId }],
      group_by: [{ key: 'api_key' }],
      workspace_id: 'default',
      type: 'requests',
      unit: 'rpm',
      value: 2,
      ...patch,
    });
    if (res.status !== 200) throw new Error(`policy: ${res.status} ${JSON.stringify(res.json)}`);
    return res.json.id as string;
  };

  const budget = async (keyId: string, patch: Json): Promise<string> => {
    const res = await gw.admin('POST', USAGE, {
      conditions: [{ key: 'api_key', value: keyId }],
      group_by: [{ key: 'api_key' }],
      workspace_id: 'default',
      type: 'tokens',
      credit_limit: 30,
      ...patch,
    });
    if (res.status !== 200) throw new Error(`budget: ${res.status} ${JSON.stringify(res.json)}`);
    return res.json.id as string;
  };

  const rateUsed = async (policyId: string, keyId: string, type: RateLimitType, unit: RateUnit): Promise<number | undefined> => {
    const pk = rateCounterPk({ id: policyId, type, unit }, entityIdOf(`api_key:${keyId}`), rateWindow(unit, clock.now()).start);
    const out = await gw.deps.repos.table.doc.send(new GetCommand({ TableName: gw.deps.repos.table.tableName, Key: { pk, sk: 'C' }, ConsistentRead: true }));
    return out.Item?.used as number | undefined;
  };

  const entityUsage = async (policyId: string): Promise<number | undefined> => {
    const res = await gw.admin('GET', `${USAGE}/${policyId}/entities`);
    return ((res.json.data as Json[])[0]?.current_usage as number | undefined) ?? undefined;
  };

  const outbox = () => (gw.deps.mailer as OutboxMailer).list();

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode, {}, { clock }), startMockOpenAI()]);
    stopWorkers = startLocalLimitsWorkers(gw.deps, { resetEveryMs: 3_600_000 });
  });
  afterAll(async () => {
    stopWorkers?.();
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    clock.set(START);
    mock.received.length = 0;
    mock.queue.length = 0;
  });

  it('refuses the request over a requests limit with 429 before any provider call', async () => {
    const k = await newKey();
    await ratePolicy(k.id, { value: 2, name: 'two per minute' });
    for (let i = 0; i < 2; i++) expect((await chat(k.key)).status).toBe(200);
    const res = await chat(k.key);
    expect(res.status).toBe(429);
    const body = (await res.json()) as { error: Json };
    expect(body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded', param: null });
    expect(body.error.message).toMatch(/Rate limit reached on requests per minute \(policy "two per minute"\): Limit 2, Used 2, Requested 1/);
    // 55 s left in the minute (the clock stands at :05).
    expect(res.headers.get('retry-after')).toBe('55');
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(res.headers.get('x-ratelimit-reset-requests')).toBe('55s');
    expect(res.headers.get('x-gw-trace-id')).toBeTruthy();
    expect(mock.received).toHaveLength(2);

    // The next window opens at the minute.
    clock.advance(55_000);
    expect((await chat(k.key)).status).toBe(200);
  });

  it('tells successful answers where the tightest matching limit stands, counting down', async () => {
    const k = await newKey();
    await ratePolicy(k.id, { value: 3 });
    await ratePolicy(k.id, { unit: 'rph', value: 5 });
    await ratePolicy(k.id, { type: 'tokens', value: 100 });
    const seen = async (res: Response) => {
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      return ['limit', 'remaining', 'reset'].map((f) => res.headers.get(`x-ratelimit-${f}-requests`));
    };
    // "Hi" plus max_tokens 20: 21 tokens reserved of 100, the minute ends in 55 s.
    const first = await chat(k.key, { max_tokens: 20 });
    expect(first.headers.get('x-ratelimit-limit-tokens')).toBe('100');
    expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe('79');
    expect(first.headers.get('x-ratelimit-reset-tokens')).toBe('55s');
    expect(await seen(first)).toEqual(['3', '2', '55s']);
    await eventually(gw, async () => expect(mock.received).toHaveLength(1));
    expect(await seen(await chat(k.key, { max_tokens: 20 }))).toEqual(['3', '1', '55s']);
    clock.advance(10_000);
    // A stream carries them too.
    expect(await seen(await chat(k.key, { max_tokens: 20, stream: true }))).toEqual(['3', '0', '45s']);
    const refused = await chat(k.key, { max_tokens: 20 });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    // A new minute: the hour's limit (5, 3 used) is now the tightest.
    clock.advance(45_000);
    expect(await seen(await chat(k.key, { max_tokens: 20 }))).toEqual(['5', '1', '59m0s']);
    // A request no policy matches gets none.
    const other = await chat((await newKey()).key);
    expect(other.status).toBe(200);
    expect(other.headers.get('x-ratelimit-limit-requests')).toBeNull();
    expect(other.headers.get('x-ratelimit-limit-tokens')).toBeNull();
  });

  it('applies an organisation-wide policy (an organisation key naming no workspace) to every workspace', async () => {
    await gw.deps.repos.workspaces.create(workspaceRecord(gw.boot.organisationId, `orgwide-${mode}`));
    const a = await newKey();
    const other = await gw.admin('POST', '/v1/api-keys/workspace/service', { name: 'b', workspace_id: `orgwide-${mode}`, scopes: ['completions.write'] });
    const b = other.json.key as string;
    const created = await gw.admin('POST', RATE, {
      conditions: [{ key: 'metadata.team', value: 'orgwide' }],
      group_by: [{ key: 'organisation_id' }],
      type: 'requests',
      unit: 'rph',
      value: 2,
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    expect((await gw.admin('GET', `${RATE}/${created.json.id as string}`)).json).toMatchObject({ workspace_id: null, applies_to: 'organisation' });
    const tagged = { 'x-gw-metadata': JSON.stringify({ team: 'orgwide' }) };
    expect((await chat(a.key, {}, tagged)).status).toBe(200);
    expect((await chat(b, {}, tagged)).status).toBe(200);
    // One counter for the organisation: both workspaces are now over it.
    expect((await chat(b, {}, tagged)).status).toBe(429);
    expect((await chat(a.key, {}, tagged)).status).toBe(429);
    expect((await chat(b)).status).toBe(200);
    expect((await gw.admin('DELETE', `${RATE}/${created.json.id as string}`)).status).toBe(200);
    expect((await chat(a.key, {}, tagged)).status).toBe(200);
  });

  it('counts per group and makes no counter call for a request no policy matches', async () => {
    const a = await newKey();
    const b = await newKey();
    const other = await newKey();
    const policy = await gw.admin('POST', RATE, {
      conditions: [
        { key: 'api_key', value: a.id },
        { key: 'api_key', value: b.id },
      ],
      group_by: [{ key: 'api_key' }],
      workspace_id: 'default',
      type: 'requests',
      unit: 'rph',
      value: 1,
    });
    expect(policy.status).toBe(200);
    const reserve = vi.spyOn(gw.deps.limits.repo, 'reserve');
    try {
      expect((await chat(a.key)).status).toBe(200);
      expect((await chat(b.key)).status).toBe(200);
      expect((await chat(a.key)).status).toBe(429);
      expect(reserve).toHaveBeenCalledTimes(3);
      reserve.mockClear();
      for (let i = 0; i < 3; i++) expect((await chat(other.key)).status).toBe(200);
      expect(reserve).not.toHaveBeenCalled();
    } finally {
      reserve.mockRestore();
    }
  });

  it('groups by metadata, the requests without it sharing one group', async () => {
    const k = await newKey();
    await ratePolicy(k.id, { group_by: [{ key: 'metadata._user' }], value: 1 });
    expect((await chat(k.key, {}, { 'x-gw-metadata': '{"_user":"alice"}' })).status).toBe(200);
    expect((await chat(k.key, {}, { 'x-gw-metadata': '{"_user":"bob"}' })).status).toBe(200);
    expect((await chat(k.key, {}, { 'x-gw-metadata': '{"_user":"alice"}' })).status).toBe(429);
    expect((await chat(k.key)).status).toBe(200);
    expect((await chat(k.key, {}, { 'x-gw-metadata': '{"team":"x"}' })).status).toBe(429);
  });

  it('matches endpoint types', async () => {
    const k = await newKey();
    await ratePolicy(k.id, {
      conditions: [
        { key: 'api_key', value: k.id },
        { key: 'endpoint_type', value: 'embed' },
      ],
      value: 1,
    });
    for (let i = 0; i < 3; i++) expect((await chat(k.key)).status).toBe(200);
  });

  it('reserves a token estimate and settles it to the real usage', async () => {
    const k = await newKey();
    const id = await ratePolicy(k.id, { type: 'tokens', value: 30 });
    // "Hi" is 1 token, plus max_tokens 20: 21 reserved, 12 used (the mock's usage).
    expect((await chat(k.key, { max_tokens: 20 })).status).toBe(200);
    await eventually(gw, async () => expect(await rateUsed(id, k.id, 'tokens', 'rpm')).toBe(12));
    const refused = await chat(k.key, { max_tokens: 20 });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-limit-tokens')).toBe('30');
    expect(refused.headers.get('x-ratelimit-remaining-tokens')).toBe('18');
    expect(refused.headers.get('x-ratelimit-requests')).toBeNull();
    // 12 + 11 fits; without the settlement (21 + 11) it would not.
    expect((await chat(k.key, { max_completion_tokens: 10 })).status).toBe(200);
    await eventually(gw, async () => expect(await rateUsed(id, k.id, 'tokens', 'rpm')).toBe(24));
  });

  it('does not count cache hits', async () => {
    const k = await newKey();
    const tokens = await ratePolicy(k.id, { type: 'tokens', value: 1000 });
    const requests = await ratePolicy(k.id, { type: 'requests', value: 1000 });
    const config = JSON.stringify({ provider: 'openai', custom_host: `${mock.url}/v1`, cache: { mode: 'simple', max_age: 600 } });
    const body = { messages: [{ role: 'user', content: `cache me ${mode}` }], max_tokens: 5 };
    const first = await chat(k.key, body, { 'x-gw-config': config });
    expect(first.headers.get('x-gw-cache-status')).toBe('MISS');
    await first.text();
    await eventually(gw, async () => expect(await rateUsed(tokens, k.id, 'tokens', 'rpm')).toBe(12));
    const hit = await chat(k.key, body, { 'x-gw-config': config });
    expect(hit.headers.get('x-gw-cache-status')).toBe('HIT');
    await hit.text();
    await eventually(gw, async () => {
      expect(await rateUsed(requests, k.id, 'requests', 'rpm')).toBe(1);
      expect(await rateUsed(tokens, k.id, 'tokens', 'rpm')).toBe(12);
    });
    expect(mock.received).toHaveLength(1);
  });

  it('refuses an exhausted budget with 402 and takes a raised credit limit at once', async () => {
    const k = await newKey();
    const id = await budget(k.id, { credit_limit: 30 });
    expect((await chat(k.key, { max_tokens: 20 })).status).toBe(200);
    await eventually(gw, async () => expect(await entityUsage(id)).toBe(12));
    const res = await chat(k.key, { max_tokens: 20 });
    expect(res.status).toBe(402);
    const body = (await res.json()) as { error: Json };
    expect(body.error).toMatchObject({ type: 'budget_exhausted', code: 'budget_exhausted' });
    expect(body.error.message).toContain('18 tokens of 30 tokens left');
    expect(mock.received).toHaveLength(1);

    expect((await gw.admin('PUT', `${USAGE}/${id}`, { credit_limit: 100 })).status).toBe(200);
    expect((await chat(k.key, { max_tokens: 20 })).status).toBe(200);
  });

  it('budgets cost: reserves an estimate, settles the cost, mails the exhausted alert once', async () => {
    const k = await newKey();
    // An unpriced model: $10 / $30 per million tokens. 1 + 1 tokens reserved = 40 µ$; 9 + 3 used = 180 µ$.
    const id = await budget(k.id, { type: 'cost', credit_limit: 0.0002, alert_threshold: 0.0001, alert_emails: ['finance@example.com'] });
    expect((await chat(k.key, { max_tokens: 1 })).status).toBe(200);
    await eventually(gw, async () => expect(await entityUsage(id)).toBeCloseTo(0.00018, 8));
    const refused = await chat(k.key, { max_tokens: 1 });
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { error: Json }).error.message).toContain('$0.000020 of $0.000200 left');
    await chat(k.key, { max_tokens: 1 });
    await eventually(gw, async () => {
      await gw.deps.queues.get(ALERTS_QUEUE).drain?.();
      const mails = (await outbox()).filter((m) => m.text.includes(id));
      expect(mails.map((m) => m.kind)).toEqual(['usage-limit.threshold', 'usage-limit.exhausted']);
      expect(mails[0]?.to).toEqual(['finance@example.com']);
    });
    const entities = await gw.admin('GET', `${USAGE}/${id}/entities?status=active`);
    expect(entities.json.total).toBe(1);
    expect((entities.json.data as Json[])[0]).toMatchObject({ value_key: `api_key:${k.id}`, is_threshold_alerts_sent: true, is_exhausted_alerts_sent: true });
  });

  it('settles a stream the client cancels half way to the usage seen, or keeps the reservation', async () => {
    const k = await newKey();
    const id = await ratePolicy(k.id, { type: 'tokens', value: 10_000 });
    const cancelHalfWay = async (running: boolean) => {
      let release!: () => void;
      mock.queue.push({ kind: 'stream', chunks: ['a', 'b', 'c', 'd'], holdAfterFirst: new Promise<void>((r) => (release = r)), runningUsage: running });
      const aborter = new AbortController();
      const res = await chat(k.key, { stream: true, max_tokens: 100 }, {}, aborter.signal);
      const reader = res.body!.getReader();
      // The role chunk and the first content chunk (with its usage when running).
      let seen = '';
      while (!seen.includes('"content":"a"')) seen += new TextDecoder().decode((await reader.read()).value);
      aborter.abort();
      // Lambda cannot see the client go (API Gateway keeps reading): there the stream runs to its end.
      if (mode === 'lambda') release();
      return release;
    };
    const release1 = await cancelHalfWay(true);
    try {
      // Direct: 9 prompt + 1 completion token seen. Lambda: the stream ran out, 9 + 4.
      await eventually(gw, async () => expect(await rateUsed(id, k.id, 'tokens', 'rpm')).toBe(mode === 'direct' ? 10 : 13));
    } finally {
      release1();
    }
    const release2 = await cancelHalfWay(false);
    try {
      // No usage seen: the reservation (1 + 100) stands.
      await eventually(gw, async () => expect(await rateUsed(id, k.id, 'tokens', 'rpm')).toBe((mode === 'direct' ? 10 : 13) + 101));
    } finally {
      release2();
    }
  });

  it("enforces the workspace's own rate limit and usage limit", async () => {
    const slug = `ws-${mode}`;
    const ws = await gw.admin('POST', '/v1/admin/workspaces', {
      name: `Limited ${mode}`,
      slug,
      rate_limits: [{ type: 'requests', unit: 'rpm', value: 2 }],
      usage_limits: [{ type: 'tokens', credit_limit: 100_000, periodic_reset: 'monthly' }],
    });
    expect(ws.status, JSON.stringify(ws.json)).toBe(200);
    const keys = await Promise.all(
      [0, 1].map(() => gw.admin('POST', '/v1/api-keys/workspace/service', { name: 'ws', workspace_id: slug, scopes: ['completions.write'] })),
    );
    const [a, b] = keys.map((k) => k.json.key as string) as [string, string];
    // The limit counts the workspace as a whole, whichever key calls.
    expect((await chat(a)).status).toBe(200);
    expect((await chat(b)).status).toBe(200);
    const res = await chat(a);
    expect(res.status).toBe(429);
    expect(((await res.json()) as { error: Json }).error.message).toContain('the workspace’s rate limit');
    const counter = workspaceBudgetCounter(ws.json.id as string, 0, String(Date.UTC(2026, 0, 1)));
    await eventually(gw, async () => expect(await gw.deps.limits.repo.counterUsed(counter)).toBe(24));
  });

  it("enforces the API key's own rate limit and usage limit", async () => {
    const limited = await newKey({ rate_limits: [{ type: 'requests', unit: 'rpd', value: 1 }] });
    expect((await chat(limited.key)).status).toBe(200);
    const res = await chat(limited.key);
    expect(res.status).toBe(429);
    expect(((await res.json()) as { error: Json }).error.message).toContain('the API key’s rate limit');

    const budgeted = await newKey({ usage_limits: { type: 'tokens', credit_limit: 20 } });
    expect((await chat(budgeted.key, { max_tokens: 10 })).status).toBe(200);
    await eventually(gw, async () => {
      const again = await chat(budgeted.key, { max_tokens: 10 });
      expect(again.status).toBe(402);
    });
  });
});

describe('feature flags at the gateway', () => {
  let mock: MockOpenAI;
  beforeAll(async () => {
    mock = await startMockOpenAI();
  });
  afterAll(async () => {
    await mock?.close();
  });

  const run = async (env: Record<string, string>) => {
    const gw = await startGantry('direct', env);
    try {
      const key = await gw.admin('POST', '/v1/api-keys/workspace/service', { name: 'k', workspace_id: 'default', scopes: ['completions.write'] });
      const keyId = key.json.id as string;
      const now = new Date().toISOString();
      const base = {
        name: null,
        organisation_id: gw.boot.organisationId,
        workspace_id: gw.boot.workspaceId,
        conditions: [{ key: 'api_key', value: keyId }],
        group_by: [{ key: 'api_key' }],
        status: 'active' as const,
        created_at: now,
        last_updated_at: now,
        created_by: null,
        last_updated_by: null,
      };
      // Stored directly: with the flag off the routes refuse.
      await gw.deps.limits.repo.createRate({ ...base, id: crypto.randomUUID(), type: 'requests', unit: 'rpd', value: 1 });
      await gw.deps.limits.repo.createUsage({
        ...base,
        id: crypto.randomUUID(),
        type: 'tokens',
        credit_limit: 1,
        alert_threshold: null,
        periodic_reset: null,
        periodic_reset_days: null,
        next_usage_reset_at: null,
        last_reset_at: null,
        reset_anchor: null,
        alert_emails: [],
      });
      const statuses: number[] = [];
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            'x-gw-api-key': key.json.key as string,
            'x-gw-provider': 'openai',
            'x-gw-custom-host': `${mock.url}/v1`,
            authorization: 'Bearer sk-x',
            'content-type': 'application/json',
          },
          body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }),
        });
        statuses.push(res.status);
        await res.text();
      }
      return statuses;
    } finally {
      await gw.close();
    }
  };

  it('POLICY_ENABLED=OFF skips every policy', async () => {
    expect(await run({ POLICY_ENABLED: 'OFF' })).toEqual([200, 200]);
  });

  it('USAGE_LIMITS_ENABLED=OFF skips budgets but not rate limits', async () => {
    expect(await run({ USAGE_LIMITS_ENABLED: 'OFF' })).toEqual([200, 429]);
  });

  it('with both on, the budget refuses first', async () => {
    expect(await run({})).toEqual([402, 402]);
  });
});
