/**
 * Ids, slugs and names over DynamoDB's key limits, in headers and bodies of every kind of route:
 * a lookup is a 404 (or 400 naming the field), a write a 400, never a 500 and never an echo of the
 * whole value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';

const HUGE = 'k'.repeat(3000);

describe.each(['direct', 'lambda'] as const)('ids over the key limits (%s mode)', (mode) => {
  let gw: TestGantry;
  let key: string;

  beforeAll(async () => {
    gw = await startGantry(mode);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await gw?.close();
  });

  async function gateway(path: string, headers: Record<string, string>, body?: unknown) {
    const res = await fetch(`${gw.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'x-gw-api-key': key, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  }

  const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

  it.each([
    ['a saved config named in x-gw-config', { 'x-gw-config': HUGE }],
    ['x-gw-virtual-key', { 'x-gw-virtual-key': HUGE }],
    ['a virtual key slug of a few hundred characters', { 'x-gw-virtual-key': 'v'.repeat(400) }],
    ['a managed provider slug', { 'x-gw-provider': `@${HUGE}` }],
  ])('chat with %s: a 4xx without the whole value', async (_, headers) => {
    const res = await gateway('/v1/chat/completions', headers, chat);
    expect(res.status, res.text).toBeGreaterThanOrEqual(400);
    expect(res.status, res.text).toBeLessThan(500);
    expect(res.text).not.toContain('v'.repeat(300));
    expect(res.text).not.toContain(HUGE);
  });

  it('a batch of an input file id of 70 KB is a 4xx', async () => {
    const res = await gateway('/v1/batches', {}, { input_file_id: 'f'.repeat(70_000), endpoint: '/v1/chat/completions', completion_window: '24h' });
    expect(res.status, res.text.slice(0, 300)).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });

  it.each([
    ['POST', '/v1/virtual-keys', { name: 'n', slug: HUGE, workspace_id: 'default', provider: 'openai', key: 'sk-x' }],
    ['POST', '/v1/virtual-keys', { name: 'n', workspace_id: HUGE, provider: 'openai', key: 'sk-x' }],
    ['POST', '/v1/api-keys/workspace/service', { name: 'n', workspace_id: HUGE, scopes: ['completions.write'] }],
    ['POST', '/v1/logs/exports', { workspace_id: HUGE, filters: {}, requested_data: ['id'] }],
    ['GET', '/v1/providers?workspace_id=', undefined],
    ['GET', '/v1/configs/', undefined],
    ['GET', '/v1/prompts/', undefined],
    ['GET', '/v1/guardrails/', undefined],
  ])('admin %s %s… with an over-long id: a 4xx', async (method, path, body) => {
    const res = await gw.admin(method, method === 'GET' ? `${path}${HUGE}` : path, body);
    expect(res.status, JSON.stringify(res.json).slice(0, 300)).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(JSON.stringify(res.json)).not.toContain(HUGE);
  });
});
