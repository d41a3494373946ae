/**
 * Reading what the service recorded without spelling out a scope: an organisation key lists the
 * logs of every workspace, the audit log takes one bound of its range, and feedback is listed, shown
 * on the log it refers to and graphed in analytics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { waitFor } from '../support/observability.ts';

type Json = Record<string, unknown>;

describe.each(['direct', 'lambda'] as const)('feedback and default scopes (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let mainKey: string;
  let otherKey: string;
  const traces = { main: `${mode}-main-trace`, other: `${mode}-other-trace` };

  const chat = (key: string, traceId: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        'x-gw-trace-id': traceId,
        authorization: 'Bearer sk-x',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
    });

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    mainKey = await gw.workspaceKey(['completions.write', 'feedback.create', 'feedback.list']);
    expect((await gw.admin('POST', '/v1/workspaces', { name: 'Other', slug: 'other' })).status).toBe(200);
    const other = await gw.admin('POST', '/v1/api-keys/workspace/service', {
      name: 'o',
      workspace_id: 'other',
      scopes: ['completions.write', 'feedback.create'],
    });
    otherKey = other.json.key as string;
    for (const [key, t] of [
      [mainKey, traces.main],
      [otherKey, traces.other],
    ] as const) {
      const res = await chat(key, t);
      expect(res.status).toBe(200);
      await res.text();
    }
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  it('lists the logs of every workspace for an organisation key that names none', async () => {
    const rows = await waitFor(gw.deps, async () => {
      const res = await gw.admin('GET', '/v1/logs');
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      const data = res.json.data as Json[];
      return data.length >= 2 ? data : undefined;
    });
    expect(rows.map((r) => r.trace_id).sort()).toEqual([traces.main, traces.other].sort());
    const first = await gw.admin('GET', '/v1/logs?page_size=1');
    expect((first.json.data as Json[]).length).toBe(1);
    const second = await gw.admin('GET', `/v1/logs?page_size=1&cursor=${String(first.json.next_cursor)}`);
    expect([...(first.json.data as Json[]), ...(second.json.data as Json[])].map((r) => r.trace_id).sort()).toEqual([traces.main, traces.other].sort());
    // A workspace key still reads its own workspace only.
    const own = await gw.admin('GET', '/v1/logs', undefined, await gw.workspaceKey(['logs.list']));
    expect((own.json.data as Json[]).map((r) => r.trace_id)).toEqual([traces.main]);
  });

  it('lists feedback with filters and pages, shows it on its log and in analytics', async () => {
    for (const [key, trace_id, value] of [
      [mainKey, traces.main, 7],
      [mainKey, traces.main, -2],
      [otherKey, traces.other, 9],
    ] as const) {
      const r = await gw.admin('POST', '/v1/feedback', { trace_id, value, weight: 0.5 }, key);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
    }
    const all = await gw.admin('GET', '/v1/feedback');
    expect(all.status, JSON.stringify(all.json)).toBe(200);
    expect(all.json).toMatchObject({ object: 'list', total: 3 });
    expect((all.json.data as Json[])[0]).toMatchObject({ object: 'feedback', trace_id: expect.any(String), value: expect.any(Number) });
    expect((await gw.admin('GET', '/v1/feedback?workspace_id=other')).json.total).toBe(1);
    expect((await gw.admin('GET', `/v1/feedback?trace_id=${traces.main}&value_min=0`)).json).toMatchObject({ total: 1, data: [{ value: 7 }] });
    const paged = await gw.admin('GET', '/v1/feedback?page_size=2&current_page=1');
    expect((paged.json.data as Json[]).length).toBe(1);
    const own = await gw.admin('GET', '/v1/feedback', undefined, mainKey);
    expect(own.json.total).toBe(2);
    const bad = await gw.admin('GET', '/v1/feedback?value_min=eleven');
    expect(bad.status).toBe(400);
    expect((bad.json.errors as { path: string }[]).map((e) => e.path)).toEqual(['value_min']);

    const row = ((await gw.admin('GET', `/v1/logs?workspace_id=default&trace_id=${traces.main}`)).json.data as Json[])[0] as Json;
    const log = await gw.admin('GET', `/v1/logs/${String(row.id)}`);
    expect((log.json.feedback as Json[]).map((f) => f.value)).toEqual([7, -2]);

    const graph = await gw.admin('GET', '/v1/analytics/graphs/feedback');
    expect(graph.status, JSON.stringify(graph.json)).toBe(200);
    expect(graph.json).toMatchObject({ object: 'analytics-graph', summary: { total: 3, avg: 4.667, weighted_avg: 4.667 } });
    const points = graph.json.data_points as { total: number }[];
    expect(points.reduce((n, p) => n + p.total, 0)).toBe(3);
    const mine = await gw.admin('GET', '/v1/analytics/graphs/feedback?workspace_id=default');
    expect(mine.json.summary).toMatchObject({ total: 2, avg: 2.5 });
  });

  it('reads the audit log from one bound of the range, the other 24 hours away', async () => {
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    const fromStart = await gw.admin('GET', `/v1/audit-logs?start_time=${hourAgo}`);
    expect(fromStart.status, JSON.stringify(fromStart.json)).toBe(200);
    expect(fromStart.json.total as number).toBeGreaterThan(0);
    const toEnd = await gw.admin('GET', `/v1/audit-logs?end_time=${new Date(Date.now() + 60_000).toISOString()}`);
    expect(toEnd.status).toBe(200);
    expect(toEnd.json.total).toBe(fromStart.json.total);
    const old = await gw.admin('GET', `/v1/audit-logs?end_time=${new Date(Date.now() - 2 * 86_400_000).toISOString()}`);
    expect(old.json.total).toBe(0);
  });
});
