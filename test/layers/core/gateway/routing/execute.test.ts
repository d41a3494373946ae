/**
 * The routing engine against a provider that answers canned responses (an in-memory Upstream):
 * which target answers, how often each is called, how long the engine waits between retries (a
 * manual clock records every sleep), and what the client would be told (status, target path,
 * retry count).
 */
import { describe, expect, it } from 'vitest';
import { createTargetCaller, type CallInput } from '../../../../../layers/core/src/gateway/call-target.ts';
import { RoutingExecutor, type TargetCaller } from '../../../../../layers/core/src/gateway/routing/execute.ts';
import { parseConfig } from '../../../../../layers/core/src/gateway/routing/validate.ts';
import { UpstreamError, ValidationError } from '../../../../../layers/core/src/http/errors.ts';
import { ManualClock } from '../../../../../layers/core/src/ports/clock.ts';
import { TrustedHosts } from '../../../../../layers/core/src/security/ssrf.ts';
import { chatCompletion, FakeUpstream, type CannedReply, type SentRequest } from '../../../../support/fake-upstream.ts';

const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] };
const chatInput = (): CallInput => ({
  endpoint: 'chatComplete',
  method: 'POST',
  body: { kind: 'json', text: JSON.stringify(body), value: body },
  params: {},
  search: '',
  clientHeaders: new Headers(),
  forwardHeaders: [],
  fromHeaders: false,
});

/** Which configured key a request carried: the targets below differ by their `api_key`. */
const keyOf = (r: SentRequest): string | undefined => r.headers.authorization?.replace('Bearer ', '');

interface Run {
  upstream: FakeUpstream;
  clock: ManualClock;
  executor: RoutingExecutor;
}

/** An engine calling the fake provider; `replies` answer by key, in order (the last one repeats). */
function engine(replies: Record<string, CannedReply[]>, random: () => number = () => 0.5): Run {
  const upstream = new FakeUpstream((r) => {
    const list = replies[keyOf(r) ?? ''] ?? [{ json: chatCompletion('default') }];
    return (list.length > 1 ? list.shift() : list[0]) as CannedReply;
  });
  const clock = new ManualClock();
  const call = createTargetCaller({ upstream, trustedHosts: TrustedHosts.parse(''), clock }, chatInput());
  return { upstream, clock, executor: new RoutingExecutor({ clock, call, random }) };
}

const ctx = { metadata: {}, params: body, url: { pathname: '/v1/chat/completions' } };
const run = (r: Run, config: unknown, opts: { metadata?: Record<string, unknown> } = {}) =>
  r.executor.execute(parseConfig(config), { ctx: { ...ctx, metadata: opts.metadata ?? {} } });

const ok = (content: string): CannedReply => ({ json: chatCompletion(content) });
const status = (code: number, headers: Record<string, string> = {}): CannedReply => ({ status: code, headers, json: { error: { message: `status ${code}` } } });
const text = async (r: { body?: NodeJS.ReadableStream }) => {
  let out = '';
  for await (const chunk of r.body ?? []) out += chunk.toString();
  return out;
};

describe('single target', () => {
  it('calls the provider once and reports the config path with no retries', async () => {
    const r = engine({ a: [ok('from a')] });
    const outcome = await run(r, { provider: 'openai', api_key: 'a' });
    expect(outcome).toMatchObject({ status: 200, retries: 0, target: { path: 'config', provider: 'openai' } });
    expect(JSON.parse(await text(outcome)).choices[0].message.content).toBe('from a');
    expect(r.upstream.sent.map((s) => s.url.href)).toEqual(['https://api.openai.com/v1/chat/completions']);
  });
});

describe('fallback', () => {
  const config = {
    strategy: { mode: 'fallback' },
    targets: [
      { provider: 'openai', api_key: 'a' },
      { provider: 'openai', api_key: 'b' },
    ],
  };

  it('moves to the next target when one answers 500, closing the body it does not use', async () => {
    const r = engine({ a: [status(500)], b: [ok('from b')] });
    const outcome = await run(r, config);
    expect(outcome).toMatchObject({ status: 200, target: { path: 'config.targets[1]' } });
    expect(r.upstream.sent.map(keyOf)).toEqual(['a', 'b']);
    expect(JSON.parse(await text(outcome)).choices[0].message.content).toBe('from b');
    expect(r.upstream.bodies[0]?.destroyed).toBe(true);
  });

  it('stops at the first target that answers 2xx', async () => {
    const r = engine({ a: [ok('from a')], b: [ok('from b')] });
    const outcome = await run(r, config);
    expect(outcome.target.path).toBe('config.targets[0]');
    expect(r.upstream.sent.map(keyOf)).toEqual(['a']);
  });

  it('gives the last failure when every target fails', async () => {
    const r = engine({ a: [status(500)], b: [status(503)] });
    const outcome = await run(r, config);
    expect(outcome).toMatchObject({ status: 503, target: { path: 'config.targets[1]' } });
  });

  it('falls back only on the listed statuses when on_status_codes is set', async () => {
    const listed = { ...config, strategy: { mode: 'fallback', on_status_codes: [429] } };
    const r = engine({ a: [status(500)], b: [ok('from b')] });
    expect(await run(r, listed)).toMatchObject({ status: 500, target: { path: 'config.targets[0]' } });
    expect(r.upstream.sent.map(keyOf)).toEqual(['a']);

    const r429 = engine({ a: [status(429)], b: [ok('from b')] });
    expect(await run(r429, listed)).toMatchObject({ status: 200, target: { path: 'config.targets[1]' } });
  });

  it('treats a timed-out target as a 408 answer and goes on to the next', async () => {
    const r = engine({ a: [{ hang: true }], b: [ok('from b')] });
    const outcome = await run(r, {
      ...config,
      targets: [
        { provider: 'openai', api_key: 'a', request_timeout: 5 },
        { provider: 'openai', api_key: 'b' },
      ],
    });
    expect(outcome).toMatchObject({ status: 200, target: { path: 'config.targets[1]' } });
    expect(r.upstream.sent.map((s) => s.timeoutMs)).toEqual([5, undefined]);
  });

  it('fails the request, without trying the next target, when the client has gone (499)', async () => {
    const clock = new ManualClock();
    const calls: string[] = [];
    const call: TargetCaller = async (target) => {
      calls.push(target.path);
      throw new UpstreamError(499, 'The client closed the request');
    };
    const executor = new RoutingExecutor({ clock, call });
    await expect(executor.execute(parseConfig(config), { ctx })).rejects.toMatchObject({ status: 499 });
    expect(calls).toEqual(['config.targets[0]']);
  });
});

describe('retry', () => {
  it('retries a 429 with exponential backoff and reports the retries made', async () => {
    const r = engine({ a: [status(429), status(429), ok('third time')] });
    const outcome = await run(r, { provider: 'openai', api_key: 'a', retry: { attempts: 3 } });
    expect(outcome).toMatchObject({ status: 200, retries: 2 });
    expect(r.upstream.sent).toHaveLength(3);
    // random() = 0.5 puts the jitter factor at 1: 1 s, then 2 s.
    expect(r.clock.sleeps).toEqual([1000, 2000]);
    expect(r.upstream.bodies.slice(0, 2).every((b) => b.destroyed)).toBe(true);
  });

  it('gives up after the attempts with retries -1 and the provider status', async () => {
    const r = engine({ a: [status(503)] });
    const outcome = await run(r, { provider: 'openai', api_key: 'a', retry: { attempts: 2 } });
    expect(outcome).toMatchObject({ status: 503, retries: -1 });
    expect(r.upstream.sent).toHaveLength(3);
  });

  it('does not retry a status outside on_status_codes (or the default list)', async () => {
    const r = engine({ a: [status(400)] });
    expect(await run(r, { provider: 'openai', api_key: 'a', retry: { attempts: 3 } })).toMatchObject({ status: 400, retries: 0 });
    expect(r.upstream.sent).toHaveLength(1);

    const only500 = engine({ a: [status(429)] });
    expect(await run(only500, { provider: 'openai', api_key: 'a', retry: { attempts: 3, on_status_codes: [500] } })).toMatchObject({ status: 429, retries: 0 });
    expect(only500.upstream.sent).toHaveLength(1);
  });

  it('waits what Retry-After asks when told to, and gives up at once past the 60 s budget', async () => {
    const r = engine({ a: [status(429, { 'retry-after-ms': '1500' }), ok('after wait')] });
    const outcome = await run(r, { provider: 'openai', api_key: 'a', retry: { attempts: 2, use_retry_after_header: true } });
    expect(outcome).toMatchObject({ status: 200, retries: 1 });
    expect(r.clock.sleeps).toEqual([1500]);

    const long = engine({ a: [status(429, { 'retry-after': '120' }), ok('never')] });
    const refused = await run(long, { provider: 'openai', api_key: 'a', retry: { attempts: 2, use_retry_after_header: true } });
    expect(refused).toMatchObject({ status: 429, retries: -1 });
    expect(long.upstream.sent).toHaveLength(1);
    expect(long.clock.sleeps).toEqual([]);
  });

  it('retries each fallback target on its own before moving on', async () => {
    const r = engine({ a: [status(502)], b: [ok('from b')] });
    const outcome = await run(r, {
      strategy: { mode: 'fallback' },
      retry: { attempts: 1 },
      targets: [
        { provider: 'openai', api_key: 'a' },
        { provider: 'openai', api_key: 'b' },
      ],
    });
    expect(outcome).toMatchObject({ status: 200, retries: 0, target: { path: 'config.targets[1]' } });
    expect(r.upstream.sent.map(keyOf)).toEqual(['a', 'a', 'b']);
  });
});

describe('loadbalance', () => {
  const config = {
    strategy: { mode: 'loadbalance' },
    targets: [
      { provider: 'openai', api_key: 'a', weight: 1 },
      { provider: 'openai', api_key: 'b', weight: 3 },
    ],
  };

  it('picks by weight with the random number given: [0, 0.25) the first, [0.25, 1) the second', async () => {
    for (const [random, key] of [
      [0, 'a'],
      [0.2, 'a'],
      [0.25, 'b'],
      [0.9, 'b'],
    ] as const) {
      const r = engine({}, () => random);
      const outcome = await run(r, config);
      expect(r.upstream.sent.map(keyOf)).toEqual([key]);
      expect(outcome.target.path).toBe(key === 'a' ? 'config.targets[0]' : 'config.targets[1]');
    }
  });

  it('never picks a target of weight 0', async () => {
    const r = engine({}, () => 0);
    await run(r, {
      ...config,
      targets: [
        { provider: 'openai', api_key: 'a', weight: 0 },
        { provider: 'openai', api_key: 'b', weight: 1 },
      ],
    });
    expect(r.upstream.sent.map(keyOf)).toEqual(['b']);
  });
});

describe('conditional', () => {
  const config = {
    strategy: { mode: 'conditional', conditions: [{ query: { 'metadata.tier': 'pro' }, then: 'pro' }], default: 'basic' },
    targets: [
      { name: 'pro', provider: 'openai', api_key: 'a' },
      { name: 'basic', provider: 'openai', api_key: 'b' },
    ],
  };

  it('routes by the request metadata, else to the default target', async () => {
    const pro = engine({});
    expect((await run(pro, config, { metadata: { tier: 'pro' } })).target.path).toBe('config.targets[0]');
    expect(pro.upstream.sent.map(keyOf)).toEqual(['a']);
    const other = engine({});
    expect((await run(other, config, { metadata: { tier: 'free' } })).target.path).toBe('config.targets[1]');
  });

  it('refuses with 400 naming the strategy when nothing matches and there is no default', async () => {
    const { default: _default, ...strategy } = config.strategy;
    const r = engine({});
    const err = await run(r, { ...config, strategy }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).problems[0]?.path).toBe('config.strategy');
    expect(r.upstream.sent).toHaveLength(0);
  });
});

describe('nesting and inheritance', () => {
  it('passes provider, key and override_params down the tree; a header provider is the default', async () => {
    const r = engine({ a: [status(500)], b: [ok('inner b')] });
    const outcome = await r.executor.execute(
      parseConfig(
        {
          strategy: { mode: 'fallback' },
          api_key: 'a',
          override_params: { temperature: 0 },
          targets: [{}, { strategy: { mode: 'single' }, api_key: 'b', targets: [{ override_params: { model: 'gpt-4o' } }] }],
        },
        { requestProvider: true },
      ),
      { ctx, base: { provider: 'openai' } },
    );
    expect(outcome).toMatchObject({ status: 200, target: { path: 'config.targets[1].targets[0]', provider: 'openai' } });
    expect(r.upstream.sent.map((s) => s.json)).toEqual([
      { ...body, temperature: 0 },
      { ...body, temperature: 0, model: 'gpt-4o' },
    ]);
  });
});
