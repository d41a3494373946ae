/**
 * Log exports end to end: create with filters and columns, start, the background job writes JSONL
 * to blob storage, download through the signed link, and the lines match the logs. Plus update,
 * cancel, the resumable job, and DATA_EXPORTS_ENABLED=OFF.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminModule } from '../../layers/core/src/admin/routes.ts';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { createApp } from '../../layers/core/src/app.ts';
import { BlobPartsSink, exportFileKey, runExport, type ExportRunnerDeps } from '../../layers/core/src/observability/exports.ts';
import { ingestConsumer, observability } from '../../layers/core/src/observability/install.ts';
import type { ExportQueueMessage } from '../../layers/core/src/observability/messages.ts';
import { HOUR_MS } from '../../layers/core/src/observability/time.ts';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import type { Queue } from '../../layers/core/src/ports/queue.ts';
import { createTestDeps } from '../support/deps.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { settleLogs, syntheticEvents, waitFor } from '../support/observability.ts';

type Json = Record<string, unknown>;
const COLUMNS = ['id', 'trace_id', 'created_at', 'request', 'response', 'is_success', 'ai_model', 'total_units', 'cost', 'response_status_code', 'metadata'];

describe.each(['direct', 'lambda'] as const)('log exports (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  const traces: string[] = [];
  const since = new Date(Date.now() - 60_000).toISOString();

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    key = await gw.workspaceKey();
    for (let i = 0; i < 6; i++) {
      const t = `export-${mode}-${i}`;
      traces.push(t);
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'x-gw-api-key': key,
          'x-gw-provider': 'openai',
          'x-gw-custom-host': `${mock.url}/v1`,
          authorization: 'Bearer sk-x',
          'content-type': 'application/json',
          'x-gw-trace-id': t,
          'x-gw-metadata': JSON.stringify({ batch: i % 2 ? 'odd' : 'even' }),
        },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `line ${i}` }] }),
      });
      await res.text();
    }
    await waitFor(gw.deps, async () => {
      const res = await gw.admin('GET', `/v1/logs?workspace_id=default&trace_id=${traces.join(',')}`);
      return (res.json.data as Json[]).length === traces.length ? true : undefined;
    });
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  async function finished(id: string): Promise<Json> {
    return waitFor(gw.deps, async () => {
      const res = await gw.admin('GET', `/v1/logs/exports/${id}`);
      return ['success', 'failed', 'stopped'].includes(String(res.json.status)) ? res.json : undefined;
    });
  }

  it('exports the matching logs as JSONL with the requested columns, downloadable by signed link', async () => {
    const filters = { time_of_generation_min: since, metadata: { batch: 'even' } };
    const created = await gw.admin('POST', '/v1/logs/exports', { workspace_id: 'default', filters, requested_data: COLUMNS, description: 'even ones' });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ object: 'export', id: expect.any(String), total: expect.any(Number) });
    const id = created.json.id as string;
    const draft = await gw.admin('GET', `/v1/logs/exports/${id}`);
    expect(draft.json).toMatchObject({
      object: 'export',
      status: 'draft',
      filters,
      requested_data: COLUMNS,
      description: 'even ones',
      workspace_id: gw.boot.workspaceId,
    });
    expect((await gw.admin('POST', `/v1/logs/exports/${id}/cancel`)).status).toBe(409);
    const early = await gw.admin('GET', `/v1/logs/exports/${id}/download`);
    expect(early.status).toBe(409);

    const started = await gw.admin('POST', `/v1/logs/exports/${id}/start`);
    expect(started.json).toEqual({ message: 'Export started', object: 'export' });
    const done = await finished(id);
    expect(done).toMatchObject({ status: 'success', progress: { exported: 3, parts: 1 } });

    const link = await gw.admin('GET', `/v1/logs/exports/${id}/download`);
    // Through the Lambda handlers the request looks like API Gateway's (https): the local server speaks http.
    const url = (link.json.signed_url as string).replace(/^https:/, 'http:');
    expect(url).toMatch(/\/v1\/logs\/exports\/.+\/file\?/);
    const file = await fetch(url);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = (await file.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Json);
    const evens = traces.filter((_, i) => i % 2 === 0);
    expect(lines.map((l) => l.trace_id).sort()).toEqual([...evens].sort());
    for (const line of lines) {
      expect(Object.keys(line).sort()).toEqual([...COLUMNS].sort());
      const log = await gw.admin('GET', `/v1/logs/${String(line.id)}`);
      expect(line).toMatchObject({
        trace_id: log.json.trace_id,
        created_at: log.json.created_at,
        is_success: true,
        ai_model: 'gpt-4o-mini',
        total_units: 12,
        cost: log.json.cost,
        response_status_code: 200,
        metadata: { batch: 'even' },
        request: { url: '/v1/chat/completions', method: 'POST', body: log.json.request_body },
        response: { status: 200, body: log.json.response_body },
      });
    }
    // A link that was tampered with opens nothing.
    expect((await fetch(url.replace(/signature=[^&]+/, 'signature=forged'))).status).toBe(403);
    const listed = await gw.admin('GET', '/v1/logs/exports?workspace_id=default');
    expect((listed.json.data as Json[]).some((e) => e.id === id)).toBe(true);
  });

  it('updates a draft, refuses bad filters naming them, and refuses changes while running', async () => {
    const created = await gw.admin('POST', '/v1/logs/exports', { workspace_id: 'default', filters: { time_of_generation_min: since }, requested_data: ['id'] });
    const id = created.json.id as string;
    const updated = await gw.admin('PUT', `/v1/logs/exports/${id}`, {
      filters: { time_of_generation_min: since, status_code: '200' },
      requested_data: ['id', 'cost'],
    });
    expect(updated.json).toMatchObject({ id, object: 'export' });
    expect((await gw.admin('GET', `/v1/logs/exports/${id}`)).json).toMatchObject({ requested_data: ['id', 'cost'], status: 'draft' });
    const bad = await gw.admin('POST', '/v1/logs/exports', { filters: { colour: 'red', status_code: 'x' }, requested_data: ['id', 'nope'] });
    expect(bad.status).toBe(400);
    const paths = (bad.json.errors as { path: string }[]).map((p) => p.path).sort();
    expect(paths).toEqual(expect.arrayContaining(['filters.colour', 'requested_data[1]']));
    const missing = await gw.admin('POST', '/v1/logs/exports', { requested_data: ['id'] });
    expect(missing.json).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'filters' }] });
  });
});

describe('log export job', () => {
  const NOW = Date.UTC(2026, 6, 1, 12);
  const clock = new ManualClock(NOW);

  it('is resumable: progress is stored after each part, and a restarted slice carries on', async () => {
    const deps = await createTestDeps({}, { clock });
    try {
      const boot = await ensureBootstrap(deps, ADMIN_KEY);
      const events = syntheticEvents(30, {
        start: NOW - 2 * HOUR_MS,
        spanMs: HOUR_MS,
        workspaceId: boot.workspaceId,
        organisationId: boot.organisationId,
        seed: 41,
        busyMinutes: 3,
      });
      expect(await ingestConsumer(deps)([{ id: 'm', attempts: 0, body: { kind: 'logs', events } }])).toEqual([]);
      const app = createApp(deps, [adminModule]);
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await app.request(path, {
          method,
          headers: { 'x-gw-api-key': ADMIN_KEY, 'content-type': 'application/json' },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        return (await res.json()) as Json;
      };
      const created = await call('POST', '/v1/logs/exports', {
        workspace_id: 'default',
        filters: { time_of_generation_min: new Date(NOW - 3 * HOUR_MS).toISOString() },
        requested_data: ['id', 'trace_id'],
      });
      const id = created.id as string;
      expect(created.total).toBe(30);
      // Start, but run the job by hand: one small part per page, one page per slice.
      const sent: ExportQueueMessage[] = [];
      const queue: Queue<ExportQueueMessage> = { send: async (m) => void sent.push(m), sendBatch: async (ms) => void sent.push(...ms) };
      const o = observability(deps);
      const runner: ExportRunnerDeps = {
        exports: o.exports,
        logs: o.logs,
        blobs: deps.blobs,
        sink: new BlobPartsSink(deps.blobs, 1),
        queue,
        clock,
        logger: deps.logger,
        logRetentionDays: 90,
        sliceMs: 0,
        pageSize: 8,
      };
      const local = deps.queues.get<ExportQueueMessage>('log-exports');
      local.setConsumer?.(async (batch) => {
        sent.push(...batch.map((m) => m.body));
        return [];
      });
      await call('POST', `/v1/logs/exports/${id}/start`);
      await settleLogs(deps);
      const first = sent.shift()!;
      await runExport(runner, first);
      const progress = (await o.exports.get(boot.organisationId, id))!;
      expect(progress).toMatchObject({ status: 'in_progress', exported: 8, parts: 1 });
      expect(progress.cursor).toEqual(expect.any(String));
      // The same message again (a redelivery after a crash): carries on from the stored cursor.
      await runExport(runner, first);
      expect((await o.exports.get(boot.organisationId, id))!.exported).toBe(16);
      while (sent.length) await runExport(runner, sent.shift()!);
      const done = (await o.exports.get(boot.organisationId, id))!;
      expect(done).toMatchObject({ status: 'success', exported: 30, parts: 4 });
      const text = Buffer.from((await deps.blobs.get(exportFileKey(done)))!).toString('utf8');
      const lines = text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { id: string });
      expect(lines.map((l) => l.id).sort()).toEqual(events.map((e) => e.id).sort());
      // The parts are gone once joined.
      expect(await deps.blobs.get(BlobPartsSink.partKey(exportFileKey(done), 1))).toBeUndefined();

      // A cancelled run stops at its next slice and drops its parts.
      await call('POST', `/v1/logs/exports/${id}/start`);
      await settleLogs(deps);
      const again = sent.shift()!;
      await runExport(runner, again);
      expect(await call('POST', `/v1/logs/exports/${id}/cancel`)).toEqual({ message: 'Export cancelled', object: 'export' });
      await runExport(runner, sent.shift()!);
      const stopped = (await o.exports.get(boot.organisationId, id))!;
      expect(stopped).toMatchObject({ status: 'stopped', exported: 8 });
      expect(await deps.blobs.get(BlobPartsSink.partKey(exportFileKey(stopped), 1))).toBeUndefined();
    } finally {
      deps.upstream.close();
    }
  });

  it('is closed with DATA_EXPORTS_ENABLED=OFF, naming the flag', async () => {
    const deps = await createTestDeps({ DATA_EXPORTS_ENABLED: 'OFF' });
    try {
      await ensureBootstrap(deps, ADMIN_KEY);
      const res = await createApp(deps, [adminModule]).request('/v1/logs/exports', { headers: { 'x-gw-api-key': ADMIN_KEY } });
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ errorCode: 'AB03', message: expect.stringContaining('DATA_EXPORTS_ENABLED=OFF') });
    } finally {
      deps.upstream.close();
    }
  });
});
