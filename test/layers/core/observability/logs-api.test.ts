/**
 * The logs list: Query operations per workspace, day and shard, merged newest first; filters on
 * status, model, provider, key, config, trace, metadata; a cursor that pages through everything
 * exactly once. And custom logs inserted with POST /v1/logs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminModule } from '../../../../layers/core/src/admin/routes.ts';
import { ensureBootstrap, type BootstrapResult } from '../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { createApp } from '../../../../layers/core/src/app.ts';
import { ingestConsumer } from '../../../../layers/core/src/observability/install.ts';
import type { LogEvent } from '../../../../layers/core/src/observability/log-event.ts';
import { newLogId } from '../../../../layers/core/src/observability/log-id.ts';
import { HOUR_MS } from '../../../../layers/core/src/observability/time.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import type { LocalQueueFactory } from '../../../../layers/core/src/ports/queue-factory.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { ADMIN_KEY } from '../../../support/gantry.ts';
import { syntheticEvents } from '../../../support/observability.ts';

const NOW = Date.UTC(2026, 4, 20, 1, 30, 0);
type Json = Record<string, unknown>;

describe('logs API', () => {
  const clock = new ManualClock(NOW);
  let deps: CoreDeps;
  let boot: BootstrapResult;
  let events: LogEvent[];
  let app: ReturnType<typeof createApp>;

  const call = async (method: string, path: string, body?: unknown, key = ADMIN_KEY): Promise<{ status: number; json: Json }> => {
    const res = await app.request(path, {
      method,
      headers: { 'x-gw-api-key': key, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json };
  };

  /** Every page of a list, following the cursor. */
  async function pages(query: string, size: number): Promise<Json[]> {
    const rows: Json[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 200; i++) {
      const { status, json } = await call(
        'GET',
        `/v1/logs?workspace_id=default&page_size=${size}&${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(status).toBe(200);
      rows.push(...(json.data as Json[]));
      cursor = json.next_cursor as string | null;
      expect(json.has_more).toBe(cursor !== null);
      if (!cursor) return rows;
    }
    throw new Error('the cursor never ended');
  }

  const ids = (xs: readonly { id?: unknown }[]) => xs.map((x) => String(x.id));
  const newestFirst = (xs: LogEvent[]) => [...xs].sort((a, b) => b.started_ms - a.started_ms || (b.id > a.id ? 1 : -1));

  beforeAll(async () => {
    deps = await createTestDeps({}, { clock });
    boot = await ensureBootstrap(deps, ADMIN_KEY);
    events = syntheticEvents(150, {
      start: NOW - 60 * HOUR_MS,
      spanMs: 60 * HOUR_MS - 1,
      workspaceId: boot.workspaceId,
      organisationId: boot.organisationId,
      seed: 31,
      busyMinutes: 12,
    });
    expect(await ingestConsumer(deps)([{ id: 'm', attempts: 0, body: { kind: 'logs', events } }])).toEqual([]);
    app = createApp(deps, [adminModule]);
  });
  afterAll(() => deps.upstream.close());

  it('pages through every log of the range exactly once, newest first, across days and shards', async () => {
    const rows = await pages('', 7);
    expect(ids(rows)).toEqual(ids(newestFirst(events)));
    expect(rows[0]).toMatchObject({ object: 'log', cost_currency: 'USD' });
    expect(rows[0]).not.toHaveProperty('request_body');
  });

  it.each([
    ['status_code=429,500', (e: LogEvent) => [429, 500].includes(e.status_code)],
    ['model=gpt-4o', (e: LogEvent) => e.model === 'gpt-4o'],
    ['provider=anthropic', (e: LogEvent) => e.provider === 'anthropic'],
    ['virtual_keys=team-openai', (e: LogEvent) => e.provider === '@team-openai'],
    ['api_key_ids=key-b', (e: LogEvent) => e.api_key_id === 'key-b'],
    ['configs=pc-alt', (e: LogEvent) => e.config_id === 'pc-alt'],
    ['trace_id=trace-3', (e: LogEvent) => e.trace_id === 'trace-3'],
    ['metadata.team=ads', (e: LogEvent) => e.metadata.team === 'ads'],
    [`metadata=${encodeURIComponent('{"team":"search","tier":"pro"}')}`, (e: LogEvent) => e.metadata.team === 'search' && e.metadata.tier === 'pro'],
    ['ai_org_model=openai__gpt-4o-mini', (e: LogEvent) => e.provider === 'openai' && e.model === 'gpt-4o-mini'],
    ['cost_min=0.1&total_units_max=400', (e: LogEvent) => e.cost_micros / 10_000 >= 0.1 && e.total_tokens <= 400],
    [
      `time_of_generation_min=${new Date(NOW - 20 * HOUR_MS).toISOString()}&time_of_generation_max=${new Date(NOW - 5 * HOUR_MS).toISOString()}`,
      (e: LogEvent) => e.started_ms >= NOW - 20 * HOUR_MS && e.started_ms <= NOW - 5 * HOUR_MS,
    ],
  ])('filters with %s', async (query, keep) => {
    const rows = await pages(query, 10);
    expect(ids(rows)).toEqual(ids(newestFirst(events.filter(keep))));
  });

  it('counts the total from the rollups when they can answer', async () => {
    const { json } = await call('GET', '/v1/logs?workspace_id=default&status_code=200&page_size=1');
    expect(json.total).toBe(events.filter((e) => e.status_code === 200).length);
    const fine = await call('GET', '/v1/logs?workspace_id=default&trace_id=trace-1&page_size=1');
    expect(fine.json.total).toBeNull();
  });

  it('reads one log by id with its bodies, and refuses bad input naming the field', async () => {
    const e = events[5]!;
    const { status, json } = await call('GET', `/v1/logs/${e.id}`);
    expect(status).toBe(200);
    expect(json).toMatchObject({
      id: e.id,
      trace_id: e.trace_id,
      request_body: e.request_body,
      request: { body: e.request_body },
      response: { status: e.status_code },
    });
    expect((await call('GET', '/v1/logs/nope')).status).toBe(404);
    const bad = await call('GET', '/v1/logs?workspace_id=default&cursor=zzz');
    expect(bad.json).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'cursor' }] });
    const size = await call('GET', '/v1/logs?workspace_id=default&page_size=1000');
    expect(size.json).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'page_size' }] });
    const status500 = await call('GET', '/v1/logs?workspace_id=default&status_code=abc');
    expect(status500.json).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'status_code' }] });
    // An organisation key without workspace_id reads its whole scope (every workspace).
    const org = await call('GET', '/v1/logs');
    expect(org.status).toBe(200);
    expect(org.json).toMatchObject({ object: 'list' });
  });

  it('reads a log by the id the gateway gave it, with an organisation key and with a workspace key', async () => {
    const [base] = syntheticEvents(1, { start: NOW - HOUR_MS, spanMs: HOUR_MS, workspaceId: boot.workspaceId, organisationId: boot.organisationId, seed: 32 });
    const mine = { ...base!, id: newLogId(base!.started_ms), trace_id: 'trace-new-id' };
    // Refused before its key was known: no workspace, the owner's to read.
    const nobody = { ...base!, id: newLogId(base!.started_ms + 1), started_ms: base!.started_ms + 1, workspace_id: null, trace_id: 'trace-nobody' };
    expect(await ingestConsumer(deps)([{ id: 'm-new', attempts: 0, body: { kind: 'logs', events: [mine, nobody] } }])).toEqual([]);
    expect((await call('GET', `/v1/logs/${mine.id}`)).json).toMatchObject({ id: mine.id, trace_id: 'trace-new-id' });
    expect((await call('GET', `/v1/logs/${nobody.id}`)).json).toMatchObject({ id: nobody.id, trace_id: 'trace-nobody' });
    const created = await call('POST', '/v1/api-keys/workspace/service', { name: 'reader', workspace_id: 'default', scopes: ['logs.view'] });
    const key = created.json.key as string;
    expect((await call('GET', `/v1/logs/${mine.id}`, undefined, key)).json).toMatchObject({ id: mine.id });
    expect((await call('GET', `/v1/logs/${nobody.id}`, undefined, key)).status).toBe(404);
    // An id that decodes but names no log.
    expect((await call('GET', `/v1/logs/${newLogId(NOW)}`)).status).toBe(404);
  });

  it('keeps a workspace key to its own workspace', async () => {
    const created = await call('POST', '/v1/api-keys/workspace/service', { name: 'viewer', workspace_id: 'default', scopes: ['logs.view', 'logs.list'] });
    const key = created.json.key as string;
    const mine = await call('GET', '/v1/logs?page_size=5&workspace_id=someone-else', undefined, key);
    expect(mine.status).toBe(200);
    expect((mine.json.data as Json[]).every((r) => r.workspace_id === boot.workspaceId)).toBe(true);
    const noScope = await call('POST', '/v1/api-keys/workspace/service', { name: 'none', workspace_id: 'default', scopes: ['configs.read'] });
    expect((await call('GET', '/v1/logs', undefined, noScope.json.key as string)).status).toBe(403);
  });

  it('inserts custom logs, one or many, which are listed and counted like any other', async () => {
    const created = await call('POST', '/v1/api-keys/workspace/service', { name: 'app', workspace_id: 'default', scopes: ['completions.write', 'logs.view'] });
    const key = created.json.key as string;
    const one = {
      request: {
        url: 'https://api.someprovider.com/v1/generate',
        method: 'POST',
        headers: { Authorization: 'Bearer sk-custom-secret' },
        body: { model: 'my-model', prompt: 'What is AI?' },
      },
      response: { status: 200, body: { output: 'AI is...', usage: { prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 } }, response_time: 123 },
      metadata: { trace_id: 'custom-trace', _user: 'ann', team: 'docs' },
    };
    const res = await call('POST', '/v1/logs', [one, { ...one, metadata: { trace_id: 'custom-trace' } }], key);
    expect(res.status).toBe(200);
    const [id] = res.json.ids as string[];
    await (deps.queues as LocalQueueFactory).drain();
    const got = await call('GET', `/v1/logs/${id}`, undefined, key);
    expect(got.json).toMatchObject({
      source: 'custom',
      trace_id: 'custom-trace',
      model: 'my-model',
      status_code: 200,
      total_ms: 123,
      prompt_tokens: 4,
      completion_tokens: 6,
      user: 'ann',
      metadata: { team: 'docs' },
      provider: 'api.someprovider.com',
      request_body: { model: 'my-model', prompt: 'What is AI?' },
    });
    expect(JSON.stringify(got.json)).not.toContain('sk-custom-secret');
    const bad = await call('POST', '/v1/logs', { request: { body: {} }, response: { status: 9 } }, key);
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ errorCode: 'AB01' });
    expect((bad.json.errors as { path: string }[]).map((p) => p.path).sort()).toEqual(['request.url', 'response.status']);
  });
});
