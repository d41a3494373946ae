/**
 * API key lifecycle with an injected ManualClock: manual rotation (both keys during the transition,
 * only the new one after), rotation policies run by the lifecycle worker (upcoming and completed
 * rotation e-mails, the new key delivered by e-mail), expiry (warning e-mail, then `expired` and
 * refused), periodic and manual usage resets, and key updates. E-mails are read from the outbox.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKeyLifecycle } from '../../layers/core/src/admin/api-keys/lifecycle.ts';
import { hashApiKey } from '../../layers/core/src/policy/api-key-secret.ts';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import type { OutboxMailer, OutboxMessage } from '../../layers/core/src/ports/local/outbox-mailer.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

type Json = Record<string, unknown>;
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

describe.each(['direct', 'lambda'] as const)('API key lifecycle (%s mode)', (mode) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 5, 9));
  let gw: TestGantry;
  let mock: MockOpenAI;
  let outbox: OutboxMailer;

  const call = async (method: string, p: string, body?: unknown, key = ADMIN_KEY) => {
    const res = await fetch(gw.url + p, {
      method,
      headers: { 'x-gw-api-key': key, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json };
  };
  /** Whether a key authenticates on the admin API. */
  const works = async (key: string) => (await call('GET', '/v1/api-keys', undefined, key)).status;
  const chat = async (key: string) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        authorization: 'Bearer sk-p',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    await res.arrayBuffer();
    return res.status;
  };
  const create = async (extra: Json = {}) => {
    const reply = await call('POST', '/v1/api-keys/workspace/service', {
      name: 'svc',
      workspace_id: 'default',
      scopes: ['api_keys.list', 'completions.write'],
      ...extra,
    });
    expect(reply.status, JSON.stringify(reply.json)).toBe(200);
    return reply.json as { id: string; key: string };
  };
  const view = async (id: string) => (await call('GET', `/v1/api-keys/${id}`)).json;
  const mails = async (kind: string, to?: string): Promise<OutboxMessage[]> =>
    (await outbox.list()).filter((m) => m.kind === kind && (to === undefined || m.to.includes(to)));

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gantry-lifecycle-outbox-'));
    [gw, mock] = await Promise.all([startGantry(mode, { GW_OUTBOX_DIR: dir }, { clock }), startMockOpenAI()]);
    outbox = gw.deps.mailer as OutboxMailer;
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  describe('manual rotation', () => {
    it('after a second rotation only the newest key and the one before it work, on a warm instance too', async () => {
      const { id, key: first } = await create();
      const rotate = async () => (await call('POST', `/v1/api-keys/${id}/rotate`, { key_transition_period_ms: 30 * MIN })).json as { key: string };
      const { key: second } = await rotate();
      // Every key is used (and so cached) before the next rotation.
      expect([await works(first), await chat(first), await works(second), await chat(second)]).toEqual([200, 200, 200, 200]);
      const { key: third } = await rotate();
      expect(await works(first)).toBe(401);
      expect(await chat(first)).toBe(401);
      expect([await works(second), await chat(second), await works(third), await chat(third)]).toEqual([200, 200, 200, 200]);
    });

    it('answers id, key and key_transition_expires_at; both keys work during the transition, only the new one after', async () => {
      const { id, key: oldKey } = await create({ alert_emails: ['ops@example.com'] });
      expect(await chat(oldKey)).toBe(200);
      const reply = await call('POST', `/v1/api-keys/${id}/rotate`, { key_transition_period_ms: 30 * MIN });
      expect(reply.status, JSON.stringify(reply.json)).toBe(200);
      const rotated = reply.json as { id: string; key: string; key_transition_expires_at: string };
      expect(rotated.id).toBe(id);
      expect(rotated.key).toMatch(/^gw_/);
      expect(rotated.key).not.toBe(oldKey);
      // (Background work may move the manual clock by its own sleeps: times are read from the key.)
      const rotatedAt = Date.parse(String((await view(id)).last_rotated_at));
      expect(rotated.key_transition_expires_at).toBe(new Date(rotatedAt + 30 * MIN).toISOString());

      expect(await works(oldKey)).toBe(200);
      expect(await works(rotated.key)).toBe(200);
      expect(await chat(oldKey)).toBe(200);
      expect(await chat(rotated.key)).toBe(200);
      const v = await view(id);
      expect(v).toMatchObject({ key_transition_expires_at: rotated.key_transition_expires_at });
      expect(String(v.key).slice(-4)).toBe(rotated.key.slice(-4));

      const [mail] = await mails('api-key.rotated', 'ops@example.com');
      expect(mail?.text).toContain(rotated.key_transition_expires_at);
      // A manual rotation returned the key to the caller: it is never e-mailed.
      expect(mail?.text).not.toContain(rotated.key);

      clock.set(Date.parse(rotated.key_transition_expires_at) - 1);
      expect(await works(oldKey)).toBe(200);
      clock.set(Date.parse(rotated.key_transition_expires_at));
      const refused = await call('GET', '/v1/api-keys', undefined, oldKey);
      expect(refused.status).toBe(401);
      expect(refused.json.message).toContain('rotated');
      expect(await chat(oldKey)).toBe(401);
      expect(await works(rotated.key)).toBe(200);

      // The worker drops the old hash once the transition is over.
      const result = await runKeyLifecycle(gw.deps);
      expect(result.transitionsEnded).toContain(id);
      expect(await gw.deps.repos.apiKeys.getByHash(hashApiKey(oldKey))).toBeUndefined();
      expect((await view(id)).key_transition_expires_at).toBeNull();
    });

    it('rotating again during a transition ends the oldest key at once', async () => {
      const { id, key: k1 } = await create();
      const k2 = ((await call('POST', `/v1/api-keys/${id}/rotate`, {})).json as { key: string }).key;
      const r3 = (await call('POST', `/v1/api-keys/${id}/rotate`, { key_transition_period_ms: 45 * MIN })).json as {
        key: string;
        key_transition_expires_at: string;
      };
      expect(await works(k1)).toBe(401);
      expect(await works(k2)).toBe(200);
      expect(await works(r3.key)).toBe(200);
      // Without a body or policy the transition is one hour; the last call named 45 minutes.
      expect(Date.parse(r3.key_transition_expires_at) - Date.parse(String((await view(id)).last_rotated_at))).toBe(45 * MIN);
    });

    it('400 AB01 for a transition under 30 minutes or an unknown field; 404 for an unknown key; scope api_keys.rotate', async () => {
      const { id } = await create();
      const short = await call('POST', `/v1/api-keys/${id}/rotate`, { key_transition_period_ms: 1_799_999 });
      expect(short.status).toBe(400);
      expect(short.json).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'key_transition_period_ms' }] });
      expect((await call('POST', `/v1/api-keys/${id}/rotate`, { transition: 1 })).status).toBe(400);
      expect((await call('POST', '/v1/api-keys/00000000-0000-0000-0000-000000000000/rotate', {})).json.errorCode).toBe('AB08');
      const lister = await create({ scopes: ['api_keys.list'] });
      const denied = await call('POST', `/v1/api-keys/${id}/rotate`, {}, lister.key);
      expect(denied.status).toBe(403);
      expect(denied.json.message).toContain('api_keys.rotate');
    });
  });

  describe('expiry', () => {
    it('warns once within seven days, then the worker marks the key expired; it is refused and the expiry is mailed', async () => {
      const expiresAt = new Date(clock.now() + 10 * DAY).toISOString();
      const { id, key } = await create({ expires_at: expiresAt, alert_emails: ['expiry@example.com'] });
      expect((await runKeyLifecycle(gw.deps)).expiryWarnings).not.toContain(id);
      clock.advance(3 * DAY + HOUR);
      expect((await runKeyLifecycle(gw.deps)).expiryWarnings).toContain(id);
      expect((await runKeyLifecycle(gw.deps)).expiryWarnings).not.toContain(id);
      expect(await mails('api-key.expiry-warning', 'expiry@example.com')).toHaveLength(1);

      clock.set(Date.parse(expiresAt));
      expect(await works(key)).toBe(401);
      const result = await runKeyLifecycle(gw.deps);
      expect(result.expired).toContain(id);
      expect((await view(id)).status).toBe('expired');
      expect((await view(id)).last_updated_by).toBe('system:key-lifecycle');
      expect((await call('GET', '/v1/api-keys', undefined, key)).json.message).toContain('expired');
      expect(await mails('api-key.expired', 'expiry@example.com')).toHaveLength(1);
      // Moving the expiry into the future brings the key back.
      expect((await call('PUT', `/v1/api-keys/${id}`, { expires_at: new Date(clock.now() + DAY).toISOString() })).status).toBe(200);
      expect((await view(id)).status).toBe('active');
      expect(await works(key)).toBe(200);
      const logs = await call(
        'GET',
        `/v1/audit-logs?start_time=${new Date(clock.now() - 30 * DAY).toISOString()}&end_time=${new Date(clock.now() + MIN).toISOString()}&resource_id=${id}&user_type=system`,
      );
      expect((logs.json.data as Json[]).map((e) => e.action)).toContain('expire');
    });
  });

  describe('rotation policies', () => {
    it('validates the policy: a period or a date, a transition of 30 minutes or more and shorter than the period, someone to mail', async () => {
      const bad = async (policy: Json, extra: Json, paths: string[]) => {
        const reply = await call('POST', '/v1/api-keys/workspace/service', {
          name: 'p',
          workspace_id: 'default',
          scopes: ['completions.write'],
          rotation_policy: policy,
          ...extra,
        });
        expect(reply.status, JSON.stringify(reply.json)).toBe(400);
        expect((reply.json.errors as { path: string }[]).map((e) => e.path)).toEqual(paths);
      };
      const mailTo = { alert_emails: ['a@example.com'] };
      await bad({ key_transition_period_ms: 3_600_000 }, mailTo, ['rotation_policy']);
      await bad({ rotation_period: 'daily' }, mailTo, ['rotation_policy.rotation_period']);
      await bad({ rotation_period: 'weekly', key_transition_period_ms: 60_000 }, mailTo, ['rotation_policy.key_transition_period_ms']);
      await bad({ rotation_period: 'weekly', key_transition_period_ms: 7 * DAY }, mailTo, ['rotation_policy.key_transition_period_ms']);
      await bad({ next_rotation_at: '2020-01-01T00:00:00Z' }, mailTo, ['rotation_policy.next_rotation_at']);
      await bad({ rotation_period: 'weekly' }, {}, ['rotation_policy']);
    });

    it('announces the rotation a day ahead, rotates on time, e-mails the new key, and plans the next one', async () => {
      const { id, key: oldKey } = await create({
        alert_emails: ['Rotations@Example.com'],
        rotation_policy: { rotation_period: 'weekly', key_transition_period_ms: HOUR },
      });
      const start = Date.parse(String((await view(id)).created_at));
      const policy = (await view(id)).rotation_policy as { next_rotation_at: string; key_transition_period_ms: number; rotation_period: string };
      expect(policy).toEqual({ rotation_period: 'weekly', next_rotation_at: new Date(start + 7 * DAY).toISOString(), key_transition_period_ms: HOUR });

      clock.set(start + 5 * DAY);
      expect((await runKeyLifecycle(gw.deps)).rotationNotices).not.toContain(id);
      clock.set(start + 6 * DAY + HOUR);
      expect((await runKeyLifecycle(gw.deps)).rotationNotices).toContain(id);
      await runKeyLifecycle(gw.deps);
      const notices = await mails('api-key.rotation-upcoming', 'rotations@example.com');
      expect(notices).toHaveLength(1);
      expect(notices[0]?.text).toContain(policy.next_rotation_at);

      clock.set(start + 7 * DAY);
      expect((await runKeyLifecycle(gw.deps)).rotated).toContain(id);
      const [done] = await mails('api-key.rotated', 'rotations@example.com');
      const newKey = /gw_[A-Za-z0-9_-]{40}/.exec(done?.text ?? '')?.[0];
      expect(newKey).toBeDefined();
      expect(await works(newKey as string)).toBe(200);
      expect(await works(oldKey)).toBe(200);
      expect(((await view(id)).rotation_policy as { next_rotation_at: string }).next_rotation_at).toBe(new Date(start + 14 * DAY).toISOString());
      expect((await view(id)).last_updated_by).toBe('system:key-lifecycle');
      clock.set(Date.parse(String((await view(id)).last_rotated_at)) + HOUR);
      expect(await works(oldKey)).toBe(401);
      expect(await works(newKey as string)).toBe(200);
      // Running again at the same time rotates nothing more.
      expect((await runKeyLifecycle(gw.deps)).rotated).not.toContain(id);
    });

    it('a manual rotation works with a policy too and restarts its cadence', async () => {
      const { id } = await create({ alert_emails: ['m@example.com'], rotation_policy: { rotation_period: 'monthly' } });
      const rotated = await call('POST', `/v1/api-keys/${id}/rotate`, {});
      expect(rotated.status).toBe(200);
      const p = (await view(id)).rotation_policy as { next_rotation_at: string; key_transition_period_ms: number };
      expect(p.key_transition_period_ms).toBe(HOUR);
      const next = new Date(String((await view(id)).last_rotated_at));
      next.setUTCMonth(next.getUTCMonth() + 1);
      expect(p.next_rotation_at).toBe(next.toISOString());
      // The policy can be removed.
      expect((await call('PUT', `/v1/api-keys/${id}`, { rotation_policy: null })).status).toBe(200);
      expect((await view(id)).rotation_policy).toBeNull();
    });
  });

  describe('usage resets and updates', () => {
    it('a monthly reset happens at the start of the month: reset_usage counts up, last_reset_at is recorded', async () => {
      clock.set(Date.UTC(2026, 3, 10, 8));
      const { id } = await create({ usage_limits: { type: 'cost', credit_limit: 10, periodic_reset: 'monthly' } });
      let v = await view(id);
      expect(v).toMatchObject({
        reset_usage: 0,
        last_reset_at: null,
        usage_limits: { credit_limit: 10, periodic_reset: 'monthly', next_usage_reset_at: '2026-05-01T00:00:00.000Z' },
      });
      clock.set(Date.UTC(2026, 4, 1));
      expect((await runKeyLifecycle(gw.deps)).usageReset).toContain(id);
      v = await view(id);
      expect(v).toMatchObject({ reset_usage: 1, last_reset_at: '2026-05-01T00:00:00.000Z', usage_limits: { next_usage_reset_at: '2026-06-01T00:00:00.000Z' } });
      // reset_usage: true resets at once and records who did it.
      clock.advance(HOUR);
      expect((await call('PUT', `/v1/api-keys/${id}`, { reset_usage: true })).status).toBe(200);
      v = await view(id);
      const owner = await gw.deps.repos.apiKeys.getByHash(hashApiKey(ADMIN_KEY));
      expect(v).toMatchObject({ reset_usage: 2, last_reset_at: v.last_updated_at, last_updated_by: owner?.id });
      expect(Date.parse(String(v.last_reset_at))).toBeGreaterThan(Date.UTC(2026, 4, 1));
    });

    it('updates name, scopes, limits, alert e-mails and defaults; validates every field', async () => {
      const { id } = await create();
      const ok = await call('PUT', `/v1/api-keys/${id}`, {
        name: 'renamed',
        scopes: ['completions.write'],
        rate_limits: [{ type: 'requests', unit: 'rpm', value: 100 }],
        usage_limits: { credit_limit: 5, periodic_reset_days: 10 },
        alert_emails: ['x@example.com'],
        defaults: { metadata: { team: 'a' } },
      });
      expect(ok.status, JSON.stringify(ok.json)).toBe(200);
      expect(await view(id)).toMatchObject({
        name: 'renamed',
        scopes: ['completions.write'],
        rate_limits: [{ type: 'requests', unit: 'rpm', value: 100 }],
        usage_limits: { credit_limit: 5, periodic_reset_days: 10 },
        alert_emails: ['x@example.com'],
        defaults: { metadata: { team: 'a' } },
      });
      const updated = await view(id);
      expect(Date.parse(String((updated.usage_limits as Json).next_usage_reset_at)) - Date.parse(String(updated.last_updated_at))).toBe(10 * DAY);
      const bad = await call('PUT', `/v1/api-keys/${id}`, {
        usage_limits: { credit_limit: 5, periodic_reset: 'weekly', periodic_reset_days: 3 },
        rate_limits: [{ type: 'requests', unit: 'rpx', value: 0 }],
        alert_emails: ['not-an-address'],
      });
      expect(bad.status).toBe(400);
      expect((bad.json.errors as { path: string }[]).map((e) => e.path).sort()).toEqual(
        ['alert_emails[0]', 'rate_limits[0].unit', 'rate_limits[0].value', 'usage_limits.periodic_reset_days'].sort(),
      );
    });
  });
});
