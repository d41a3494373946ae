/**
 * Saved guardrails named in config hooks, read through the `GuardrailSource` interface (a small
 * double of it here; the real source is the saved-guardrail resource's), and the feature flag.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GuardrailSource, SavedGuardrail } from '../../../../layers/core/src/kernel/guardrails.ts';
import type { Principal } from '../../../../layers/core/src/kernel/principal.ts';
import { startMockOpenAI, type MockOpenAI } from '../../../support/mock-openai.ts';
import { startGantry, type TestGantry } from '../../../support/gantry.ts';

type Json = Record<string, unknown>;

const saved: SavedGuardrail = {
  id: 'gr_1',
  slug: 'no-passwords',
  version_id: 'v1',
  name: 'No passwords',
  checks: [
    { id: 'default.contains', parameters: { operator: 'none', words: ['password'] } },
    { id: 'default.contains', parameters: { operator: 'none', words: ['Hi'] }, is_enabled: false },
  ],
  actions: { deny: true, async: false, on_success: null, on_fail: { feedback: { value: -10 } } },
};

class SavedDouble implements GuardrailSource {
  asked: Array<{ workspaceId: string | null | undefined; name: string }> = [];
  async forGateway(principal: Principal, idOrSlug: string): Promise<SavedGuardrail | undefined> {
    this.asked.push({ workspaceId: principal.workspaceId, name: idOrSlug });
    return idOrSlug === saved.id || idOrSlug === saved.slug ? saved : undefined;
  }
  invalidate(): void {}
}

describe('saved guardrails and the flag', () => {
  let gw: TestGantry;
  let off: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  let offKey: string;

  const chat = async (g: TestGantry, k: string, config: Json, content = 'Hi') => {
    const res = await fetch(`${g.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gw-api-key': k, 'x-gw-config': JSON.stringify(config), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
    });
    return { status: res.status, json: (await res.json()) as Json };
  };
  const target = (extra: Json) => ({ provider: 'openai', api_key: 'sk-x', custom_host: `${mock.url}/v1`, ...extra });

  beforeAll(async () => {
    [gw, off, mock] = await Promise.all([startGantry('direct'), startGantry('direct', { GUARDRAILS_ENABLED: 'OFF' }), startMockOpenAI()]);
    [key, offKey] = await Promise.all([gw.workspaceKey(), off.workspaceKey()]);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), off?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.received.length = 0;
    delete gw.deps.guardrails;
  });

  it('refuses a config naming a saved guardrail with 400 naming it when saved guardrails are not available', async () => {
    const res = await chat(gw, key, target({ input_guardrails: ['no-passwords'] }));
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ param: 'input_guardrails[0]' });
    expect(String((res.json.error as Json).message)).toContain('"no-passwords"');
    expect(mock.received).toHaveLength(0);
  });

  it('runs a saved guardrail named by slug or id with its own checks and actions, once per request', async () => {
    const source = new SavedDouble();
    gw.deps.guardrails = source;
    const denied = await chat(gw, key, target({ input_guardrails: ['no-passwords'], output_guardrails: [{ id: 'no-passwords' }] }), 'the password is x');
    expect(denied.status).toBe(446);
    const before = (denied.json.hook_results as { before_request_hooks: Json[] }).before_request_hooks;
    expect(before).toEqual([expect.objectContaining({ id: 'no-passwords', verdict: false, deny: true, feedback: { value: -10 } })]);
    // The disabled check did not run.
    expect(before[0]?.checks).toHaveLength(1);
    expect(source.asked).toEqual([{ workspaceId: expect.any(String), name: 'no-passwords' }]);
    expect(mock.received).toHaveLength(0);

    const passed = await chat(gw, key, target({ output_guardrails: ['gr_1'] }));
    expect(passed.status).toBe(200);
  });

  it('refuses an unknown saved guardrail with 400 naming it', async () => {
    gw.deps.guardrails = new SavedDouble();
    const res = await chat(gw, key, { strategy: { mode: 'fallback' }, targets: [target({ output_guardrails: ['gone'] })] });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ param: 'output_guardrails[0]' });
    expect(String((res.json.error as Json).message)).toContain('no saved guardrail "gone"');
  });

  it('refuses a config whose hook names an unknown check or bad parameters, naming each path', async () => {
    const res = await chat(gw, key, {
      strategy: { mode: 'fallback' },
      targets: [
        target({ output_guardrails: [{ 'default.nope': {} }] }),
        target({ input_guardrails: [{ 'default.contains': { operator: 'some', words: ['x'] } }] }),
      ],
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ param: 'x-gw-config', code: 'AB01' });
    expect(String((res.json.error as Json).message)).toContain('targets[0].output_guardrails[0].default.nope: unknown check "default.nope"');
    expect(String((res.json.error as Json).message)).toContain('targets[1].input_guardrails[0].default.contains.operator: must be one of any, all, none');
    expect(mock.received).toHaveLength(0);
  });

  it('adds hook_results (strict_openai_compliance off) to answers of any JSON object layout after input hooks only, and leaves other JSON as it came', async () => {
    const passing = target({ strict_openai_compliance: false, input_guardrails: [{ 'default.contains': { operator: 'none', words: ['password'] } }] });
    const answer = (body: string) => mock.queue.push({ kind: 'error', status: 200, body, contentType: 'application/json' });
    answer('\n  {"id": "c1", "object": "chat.completion"}  \n');
    const padded = await chat(gw, key, passing);
    expect(padded.status).toBe(200);
    expect(padded.json).toMatchObject({
      id: 'c1',
      object: 'chat.completion',
      hook_results: { before_request_hooks: [expect.objectContaining({ verdict: true })] },
    });
    answer('{ }');
    expect((await chat(gw, key, passing)).json).toEqual({
      hook_results: { before_request_hooks: [expect.objectContaining({ verdict: true })], after_request_hooks: [] },
    });
    answer('[1, 2]');
    const list = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(passing), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(await list.text()).toBe('[1, 2]');
  });

  it('runs no hook with GUARDRAILS_ENABLED=OFF', async () => {
    const res = await chat(off, offKey, target({ input_guardrails: [{ 'default.contains': { operator: 'none', words: ['Hi'] }, deny: true }] }));
    expect(res.status).toBe(200);
    expect(mock.received).toHaveLength(1);
  });
});
