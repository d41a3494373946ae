/**
 * When the table cannot be written, `GET /v1/health` says `degraded` and names the check, while the
 * gateway keeps serving warm keys and saved configs from memory, well past their cache TTL. The
 * request's log waits in the queue (then its dead letters) instead of being lost.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import type { LocalQueueFactory } from '../../layers/core/src/ports/queue-factory.ts';
import { LOGS_QUEUE, type LogQueueMessage } from '../../layers/core/src/observability/messages.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { settleLogs } from '../support/observability.ts';

describe.each(['direct', 'lambda'] as const)('health while the table is unreachable (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  let slug: string;
  const clock = new ManualClock(Date.UTC(2026, 7, 1));

  const chat = (apiKey: string, traceId: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gw-api-key': apiKey, 'x-gw-config': slug, authorization: 'Bearer sk-x', 'content-type': 'application/json', 'x-gw-trace-id': traceId },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
    });

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode, {}, { clock }), startMockOpenAI()]);
    key = await gw.workspaceKey();
    const saved = await gw.admin('POST', '/v1/configs', {
      name: 'main',
      workspace_id: 'default',
      config: { provider: 'openai', custom_host: `${mock.url}/v1` },
    });
    expect(saved.status).toBe(200);
    slug = saved.json.slug as string;
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  it('answers degraded, keeps serving the warm key and config, and keeps the log', async () => {
    const warm = await chat(key, `${mode}-warm`);
    expect(warm.status).toBe(200);
    await warm.text();
    await settleLogs(gw.deps);
    expect((await fetch(`${gw.url}/v1/health`)).status).toBe(200);

    const doc = gw.deps.repos.table.doc as DynamoDBDocumentClient & { send: (...args: unknown[]) => Promise<unknown> };
    const send = doc.send;
    doc.send = async () => {
      throw Object.assign(new Error('connect ECONNREFUSED'), { name: 'TimeoutError' });
    };
    try {
      clock.advance(10 * 60_000);
      const health = await fetch(`${gw.url}/v1/health`);
      expect(health.status).toBe(503);
      expect(await health.json()).toEqual({ status: 'degraded', checks: { database: 'not writable (TimeoutError)' } });

      // Ten minutes on, past the key and config cache TTLs: both are still served from memory.
      const res = await chat(key, `${mode}-outage`);
      expect(res.status, await res.clone().text()).toBe(200);
      expect(await res.json()).toMatchObject({ object: 'chat.completion' });
      // A key never seen before cannot be checked.
      expect((await chat('gw_never-seen-before-key-0000000000000000', `${mode}-cold`)).status).not.toBe(200);

      // The log could not be written: after its retries it waits in the dead letters, whole.
      await settleLogs(gw.deps);
      const dead = (gw.deps.queues as LocalQueueFactory).get<LogQueueMessage>(LOGS_QUEUE).deadLetters();
      const events = dead.flatMap((m) => (m.body.kind === 'log' ? [m.body.event] : m.body.kind === 'logs' ? m.body.events : []));
      expect(events.map((e) => e.trace_id)).toContain(`${mode}-outage`);
    } finally {
      doc.send = send;
    }
    clock.advance(10_000);
    expect((await fetch(`${gw.url}/v1/health`)).status).toBe(200);
  });
});
