/**
 * Prompt renders within limits (issue 29, item 11), through the admin API and the gateway: a
 * partial included many times by another partial, and a partial in a section over a long list of
 * the request's own, would render a hundred megabytes from a few kilobytes (or include partials
 * tens of thousands of times). They are refused with
 * a 422 naming the prompt and the limit, before anything is written, while /v1/health goes on
 * answering; a prompt whose partials stay within the limits renders as before. Both local modes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

type Json = Record<string, unknown>;

const LEAF = `${'All work and no play. '.repeat(186)}\n`; // about 4 KB

describe.each(['direct', 'lambda'] as const)('prompt render limits (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  const ok = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const res = await gw.admin(method, path, body);
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.json)}`).toBe(200);
    return res.json;
  };
  const complete = (prompt: string, body: Json) =>
    fetch(`${gw.url}/v1/prompts/${prompt}/completions`, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    await ok('POST', '/v1/virtual-keys', {
      name: 'vk',
      slug: 'vk-limits',
      workspace_id: 'default',
      provider: 'openai',
      key: 'sk-limits',
      configurations: { custom_host: `${mock.url}/v1` },
    });
    const collection = (await ok('POST', '/v1/collections', { name: 'Limits', workspace_id: 'default' })).id;
    await ok('POST', '/v1/prompts/partials', { name: 'Leaf', string: LEAF, workspace_id: 'default' });
    // 100 leaves of 4 KB: 400 KB, then 250 of those in the prompt: 100 MB.
    await ok('POST', '/v1/prompts/partials', { name: 'Hundred', string: '{{>leaf}}'.repeat(100), workspace_id: 'default' });
    const prompt = (name: string, string: string) =>
      ok('POST', '/v1/prompts', { name, collection_id: collection, string, parameters: {}, model: 'gpt-4o-mini', virtual_key: 'vk-limits' });
    await prompt('Blow up', `Read this: ${'{{>hundred}}'.repeat(250)}`);
    // 25,000 inclusions of one character.
    await ok('POST', '/v1/prompts/partials', { name: 'Tiny', string: 'x', workspace_id: 'default' });
    await ok('POST', '/v1/prompts/partials', { name: 'Tiny hundred', string: '{{>tiny}}'.repeat(100), workspace_id: 'default' });
    await prompt('Many tiny', '{{>tiny-hundred}}'.repeat(250));
    await prompt('Per item', '{{#items}}{{>leaf}}{{/items}}');
    await prompt('Signed list', JSON.stringify([{ role: 'user', content: 'Rules:{{#rules}}\n- {{.}} {{>signature}}{{/rules}}' }]));
    await ok('POST', '/v1/prompts/partials', { name: 'Signature', string: '({{company}})', workspace_id: 'default' });
    key = await gw.workspaceKey(['completions.write']);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  it('refuses a prompt whose partials would render 100 MB (admin render and gateway), naming the prompt and the size limit', async () => {
    const [res, health] = await Promise.all([gw.admin('POST', '/v1/prompts/blow-up/render', { variables: {} }), fetch(`${gw.url}/v1/health`)]);
    expect(health.status).toBe(200);
    expect(res.status).toBe(422);
    expect(res.json).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'string' }] });
    expect(res.json.message).toMatch(/^The prompt "blow-up" \(version 1\) cannot be rendered: it would render more than 1,048,5\d\d characters/);
    const before = mock.received.length;
    const gateway = await complete('blow-up', { variables: {} });
    expect(gateway.status).toBe(422);
    expect(((await gateway.json()) as { error: Json }).error).toMatchObject({ param: 'string', code: 'prompt_render_failed', type: 'invalid_request_error' });
    expect(mock.received.length).toBe(before);
  });

  it('refuses a prompt that would include partials more than 1,000 times, however small they are', async () => {
    const before = mock.received.length;
    const [res, health] = await Promise.all([complete('many-tiny', { variables: {} }), fetch(`${gw.url}/v1/health`)]);
    expect(health.status).toBe(200);
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: Json };
    expect(body.error).toMatchObject({ param: 'partials', code: 'prompt_render_failed', type: 'invalid_request_error' });
    expect(body.error.message).toContain('"many-tiny" (version 1) cannot be rendered: it would include partials more than 1,000 times');
    expect(mock.received.length).toBe(before);
    const admin = await gw.admin('POST', '/v1/prompts/many-tiny/render', { variables: {} });
    expect([admin.status, admin.json.errors]).toEqual([422, [{ path: 'partials', message: expect.stringContaining('1,000') }]]);
  });

  it('refuses a partial in a section over a long list of the request (gateway and admin), naming the size limit', async () => {
    const variables = { items: Array.from({ length: 30_000 }, () => 1) };
    const [res, health] = await Promise.all([complete('per-item', { variables }), fetch(`${gw.url}/v1/health`)]);
    expect(health.status).toBe(200);
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: Json };
    expect(body.error).toMatchObject({ param: 'string', code: 'prompt_render_failed' });
    expect(body.error.message).toMatch(/"per-item" \(version 1\) cannot be rendered: it would render more than [\d,]+ characters/);
    const admin = await gw.admin('POST', '/v1/prompts/per-item/render', { variables });
    expect(admin.status).toBe(422);
    expect(admin.json).toMatchObject({ errors: [{ path: 'string' }] });
  });

  it('renders a prompt with partials within the limits as before, a few items or a long list', async () => {
    const few = await ok('POST', '/v1/prompts/signed-list/render', { variables: { company: 'Acme', rules: ['Be brief', 'Be kind'] } });
    expect(few.data).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Rules:\n- Be brief (Acme)\n- Be kind (Acme)' }] });
    const rules = Array.from({ length: 900 }, (_, i) => `rule ${i}`);
    const res = await complete('per-item', { variables: { items: [1, 2] } });
    expect(res.status).toBe(200);
    expect(JSON.parse(mock.received.at(-1)?.body ?? '{}').messages).toEqual([{ role: 'user', content: LEAF + LEAF }]);
    const many = await ok('POST', '/v1/prompts/signed-list/render', { variables: { company: 'Acme', rules } });
    const content = ((many.data as Json).messages as Json[])[0]?.content as string;
    expect(content.split('\n')).toHaveLength(901);
    expect(content.endsWith('- rule 899 (Acme)')).toBe(true);
  });
});
