/**
 * Guardrail hooks on realtime sessions, driven by a `ws` client against the mock realtime provider
 * (a real `ws` server): client text that a deny hook refuses never reaches the provider and is
 * answered with an `error` event; model text (deltas split anywhere, transcripts, function call
 * arguments, and the events that repeat it whole) never reaches the client once denied, and the
 * response is cancelled; the session goes on, and a passing session is relayed as it was.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { connected, openRealtime, type Json } from '../support/realtime-client.ts';
import { until } from '../support/until.ts';
import { startMockRealtime, type MockRealtime } from '../support/mock-realtime.ts';
import { storedLog } from '../support/observability.ts';

const FORBIDDEN = 'glpat-0123';
const block = (words: string[], extra: Json = {}) => ({ 'default.contains': { operator: 'none', words }, deny: true, ...extra });

const say = (text: string, extra: Json = {}) => ({ type: 'response.create', response: { metadata: { text, chunk: 3, ...extra } } });
const userText = (text: string, id = 'evt_client_1') => ({
  type: 'conversation.item.create',
  event_id: id,
  item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
});
/** Polls until `get` finds something (the provider's socket is read apart from the client's). */
const eventually = <T>(get: () => T | undefined): Promise<T> => until(get, 'the event');

/** Events without their ids (fresh in every session), to compare two sessions. */
const shapeOf = (events: readonly Json[]) =>
  JSON.parse(JSON.stringify(events).replace(/"(event_mock|resp_mock|item_mock|call|sess_mock)_\d+"/g, '"$1"')) as Json[];

describe.each(['direct', 'lambda'] as const)('realtime guardrails (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockRealtime;
  let key: string;
  let n = 0;
  const trace = (label: string) => `rtg-${mode}-${label}-${++n}`;
  const wsUrl = () => `${gw.url.replace('http', 'ws')}/v1/realtime?model=gpt-4o-realtime-preview`;
  const target = (hooks: Json = {}) => ({ provider: 'openai', api_key: 'sk-provider', custom_host: `${mock.url}/v1`, ...hooks });
  const session = async (hooks: Json, traceId = trace('s')) =>
    connected(await openRealtime(wsUrl(), { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(target(hooks)), 'x-gw-trace-id': traceId }));
  const provider = () => mock.connections.at(-1)!;

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockRealtime()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.connections.length = 0;
  });

  it('never relays client text an input guardrail denies, answers an error event naming the event, and keeps the session open', async () => {
    const t = trace('input');
    const c = await session({ input_guardrails: [block([FORBIDDEN])] }, t);
    await c.until('session.created');
    c.send(userText(`my token is ${FORBIDDEN}`, 'evt_item'));
    c.send({
      type: 'conversation.item.create',
      event_id: 'evt_tool',
      item: { type: 'function_call_output', call_id: 'c1', output: `{"token":"${FORBIDDEN}"}` },
    });
    c.send({ type: 'response.create', event_id: 'evt_resp', response: { instructions: `Repeat ${FORBIDDEN}` } });
    c.send({
      type: 'response.create',
      event_id: 'evt_input',
      response: { input: [{ type: 'message', role: 'system', content: [{ type: 'input_text', text: FORBIDDEN }] }] },
    });
    c.send({ type: 'session.update', event_id: 'evt_session', session: { instructions: `Say ${FORBIDDEN}` } });
    const errors = await c.until('error', 5);
    expect(errors.map((e) => (e.error as Json).event_id)).toEqual(['evt_item', 'evt_tool', 'evt_resp', 'evt_input', 'evt_session']);
    expect(errors[0]).toMatchObject({
      type: 'error',
      event_id: expect.stringMatching(/^event_gw_/),
      error: { type: 'invalid_request_error', code: 'hooks_failed', message: expect.stringContaining('denied by a guardrail hook'), event_id: 'evt_item' },
      hook_results: { before_request_hooks: [{ verdict: false, deny: true }] },
    });

    // The session goes on: allowed text is relayed, in order.
    c.send({ type: 'session.update', session: { instructions: 'Be brief.' } });
    await c.until('session.updated');
    c.send(userText('hello'));
    c.send(say('fine'));
    await c.until('response.done');
    const seen = provider().events;
    expect(JSON.stringify(seen)).not.toContain(FORBIDDEN);
    expect(seen.map((e) => e.type)).toEqual(['session.update', 'conversation.item.create', 'response.create']);
    c.ws.close();
    await c.closed;

    const log = await storedLog(gw, t);
    expect(log).toMatchObject({ endpoint: 'realtime', error_code: 'hooks_failed' });
    const results = log.hook_results as { before_request_hooks: Json[] };
    expect(results.before_request_hooks.filter((h) => h.verdict === false)).toHaveLength(5);
    expect(results.before_request_hooks.filter((h) => h.verdict === true)).toHaveLength(2);
    expect(JSON.stringify(log)).toContain('"client_events_denied":5');
  });

  it('reads only the last user message for a hook of scope last_user, and refuses frames it cannot check', async () => {
    const c = await session({ input_guardrails: [block([FORBIDDEN], { scope: 'last_user' })] });
    await c.until('session.created');
    c.send({ type: 'session.update', session: { instructions: `Say ${FORBIDDEN}` } });
    await c.until('session.updated');
    c.send(userText(`user says ${FORBIDDEN}`, 'evt_user'));
    expect((await c.until('error'))[0]).toMatchObject({ error: { code: 'hooks_failed', event_id: 'evt_user' } });

    c.ws.send(Buffer.from(JSON.stringify(userText(FORBIDDEN))), { binary: true });
    c.ws.send(`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"${FORBIDDEN}"}]},"x":NaN}`);
    const [, binary, lenient] = await c.until('error', 3);
    expect(binary).toMatchObject({ error: { code: 'invalid_event' } });
    expect(lenient).toMatchObject({ error: { code: 'invalid_event' } });
    // A duplicate key: the provider is sent the event that was checked, re-serialised.
    c.ws.send(
      `{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"ok"}]},"type":"input_audio_buffer.commit"}`,
    );
    c.send({ type: 'session.update', session: { voice: 'alloy' } });
    await c.until('session.updated', 2);
    const seen = provider().events;
    expect(provider().binaryFrames).toBe(0);
    expect(seen.map((e) => e.type)).toEqual(['session.update', 'input_audio_buffer.commit', 'session.update']);
    c.ws.close();
  });

  it('stops a response whose text, split across deltas, a deny hook refuses: no event carries it, the response is cancelled, the session goes on', async () => {
    const t = trace('output');
    const c = await session({ output_guardrails: [block([FORBIDDEN])] }, t);
    await c.until('session.created');
    c.send(say(`The token is ${FORBIDDEN}, keep it.`));
    const [done] = await c.until('response.done');
    const [error] = c.of('error');
    expect(error).toMatchObject({
      type: 'error',
      event_id: expect.stringMatching(/^event_gw_/),
      error: { type: 'invalid_request_error', code: 'hooks_failed', message: expect.stringContaining('stopped by a guardrail hook'), event_id: null },
      hook_results: { after_request_hooks: [{ verdict: false, deny: true }] },
    });
    expect(JSON.stringify(c.events)).not.toContain('glpat');
    expect(c.of('response.output_text.delta')).toEqual([]);
    expect(done).toMatchObject({ response: { status: 'incomplete', status_details: { type: 'incomplete', reason: 'content_filter' }, output: [] } });
    expect(c.events.findIndex((e) => e.type === 'error')).toBeLessThan(c.events.indexOf(done!));

    // The provider was told to cancel the response and forget its items; its answers are not relayed.
    const cancel = await eventually(() => provider().events.find((e) => e.type === 'response.cancel'));
    expect(cancel.response_id).toEqual((done!.response as Json).id);
    expect(provider().events.filter((e) => e.type === 'conversation.item.delete')).not.toHaveLength(0);

    // The session goes on.
    c.send(say('All is well.'));
    await c.until('response.done', 2);
    expect(
      c
        .of('response.output_text.delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe('All is well.');
    expect(c.of('response.done')[1]).toMatchObject({ response: { status: 'completed' } });
    expect(c.of('error')).toHaveLength(1);
    expect(c.of('conversation.item.deleted')).toEqual([]);
    c.ws.close();
    await c.closed;

    const log = await storedLog(gw, t);
    expect(log).toMatchObject({ error_code: 'hooks_failed' });
    expect((log.hook_results as { after_request_hooks: Json[] }).after_request_hooks).toContainEqual(expect.objectContaining({ verdict: false, deny: true }));
    expect(JSON.stringify(log)).toContain('"responses_stopped":1');
  });

  it('releases deltas window by window, never one that reaches into the denied text', async () => {
    const c = await session({ output_guardrails: [block([FORBIDDEN], { window: { size: 8, context: 16 } })] });
    await c.until('session.created');
    const text = `Hello there, my friend. Here it is: ${FORBIDDEN} and the rest.`;
    c.send(say(text));
    await c.until('response.done');
    const sent = c
      .of('response.output_text.delta')
      .map((e) => e.delta)
      .join('');
    expect(sent.length).toBeGreaterThan(0);
    expect(text.startsWith(sent)).toBe(true);
    expect(sent.length).toBeLessThan(text.indexOf(FORBIDDEN) + FORBIDDEN.length);
    expect(JSON.stringify(c.events)).not.toContain(FORBIDDEN);
    expect(c.of('error')).toHaveLength(1);
    c.ws.close();
  });

  it('checks audio transcripts and function call arguments as text the model wrote', async () => {
    const c = await session({ output_guardrails: [block([FORBIDDEN])] });
    await c.until('session.created');
    c.send(say(`Spoken ${FORBIDDEN} words`, { kind: 'audio' }));
    await c.until('response.done');
    c.send(say(`{"token":"${FORBIDDEN}"}`, { kind: 'function_call' }));
    await c.until('response.done', 2);
    expect(c.of('error')).toHaveLength(2);
    expect(JSON.stringify(c.events)).not.toContain('glpat');
    // Audio is not checked: only what came before the first unchecked transcript text went out.
    const heard = c
      .of('response.output_audio.delta')
      .map((e) => Buffer.from(String(e.delta), 'base64').toString())
      .join('');
    expect(heard).not.toContain('glpat');
    expect(heard.length).toBeLessThan(8);
    expect(c.of('response.done').map((e) => (e.response as Json).status)).toEqual(['incomplete', 'incomplete']);
    c.ws.close();
  });

  it('relays a passing session exactly as a session without hooks', async () => {
    const run = async (hooks: Json) => {
      const c = await session(hooks);
      await c.until('session.created');
      c.send({ type: 'session.update', session: { instructions: 'Be brief.' } });
      c.send(userText('hello'));
      c.send(say('A plain answer, long enough for a few windows of the gate.'));
      await c.until('response.done');
      c.send(say('Call it.', { kind: 'function_call' }));
      await c.until('response.done', 2);
      c.ws.close();
      await c.closed;
      return { client: shapeOf(c.events), provider: shapeOf(provider().events) };
    };
    const plain = await run({});
    const guarded = await run({ input_guardrails: [block(['never-said'])], output_guardrails: [block(['never-said'], { window: { size: 10, context: 5 } })] });
    expect(guarded).toEqual(plain);
  });

  it('refuses the upgrade with 400 naming the path of a hook whose check does not exist', async () => {
    const res = await openRealtime(wsUrl(), {
      'x-gw-api-key': key,
      'x-gw-config': JSON.stringify(target({ output_guardrails: [{ 'default.nope': {}, deny: true }] })),
    });
    expect(res).toMatchObject({ status: 400, body: { error: { message: expect.stringContaining('output_guardrails[0]') } } });
    expect(mock.connections).toHaveLength(0);
  });
});
