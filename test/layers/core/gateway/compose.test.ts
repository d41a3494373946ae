/**
 * The target caller buildCaller composes, run by the routing engine against an in-memory provider:
 * the decorators act in their order (guardrail hooks outermost, then the hooks' admitTarget, then
 * the model each target is sent, the header options, the provider call), and a refusal of one
 * target is that target's answer, so a fallback goes on. Decorators that read the table (the
 * response cache, managed providers) are tested in the integration lane.
 */
import { describe, expect, it } from 'vitest';
import { buildCaller } from '../../../../layers/core/src/gateway/compose.ts';
import type { EndpointSpec } from '../../../../layers/core/src/gateway/endpoint.ts';
import { openRecord } from '../../../../layers/core/src/gateway/flight.ts';
import { readInput, type RouteMatch } from '../../../../layers/core/src/gateway/input.ts';
import { authenticate, resolve } from '../../../../layers/core/src/gateway/resolve.ts';
import { RoutingExecutor } from '../../../../layers/core/src/gateway/routing/execute.ts';
import { RateLimitedError, UsageExhaustedError } from '../../../../layers/core/src/http/errors.ts';
import type { GatewayHook, TargetAdmission } from '../../../../layers/core/src/kernel/lifecycle.ts';
import type { SentRequest } from '../../../support/fake-upstream.ts';
import { CHAT, chatBody, gatewayRequest, unitDeps, type UnitDepsOptions } from '../../../support/unit-deps.ts';

interface Composed {
  run: () => ReturnType<RoutingExecutor['execute']>;
  deps: ReturnType<typeof unitDeps>;
  record: ReturnType<typeof openRecord>['record'];
}

/** The phases before buildCaller, as the pipeline runs them, then an engine over the composed caller. */
async function compose(
  headers: Record<string, string>,
  opts: UnitDepsOptions & { spec?: EndpointSpec; body?: unknown; route?: RouteMatch; path?: string } = {},
): Promise<Composed> {
  const deps = unitDeps(opts);
  const req = gatewayRequest(opts.path ?? '/chat/completions', { body: opts.body === undefined ? chatBody() : opts.body, headers });
  const f = openRecord(opts.spec ?? CHAT, req, deps, undefined);
  const principal = await authenticate(f);
  const input = await readInput(f, req, opts.route ?? {});
  const resolved = await resolve(f, principal);
  const call = buildCaller(f, input, resolved);
  const executor = new RoutingExecutor({ clock: deps.clock, call });
  const run = () =>
    executor.execute(resolved.config, {
      ctx: { metadata: f.record.metadata, params: input.fields, url: { pathname: f.record.path } },
      ...(resolved.headerProvider ? { base: { provider: resolved.headerProvider } } : {}),
    });
  return { run, deps, record: f.record };
}

const keyOf = (r: SentRequest): string | undefined => r.headers.authorization?.replace('Bearer ', '');
const fallback = (...targets: object[]) => JSON.stringify({ strategy: { mode: 'fallback' }, targets });

/** A hook that refuses the targets of one provider, recording every admission it is asked. */
function refusing(provider: string, admissions: TargetAdmission[], refusal = new UsageExhaustedError('The managed provider budget is spent')): GatewayHook {
  return {
    name: 'budget',
    admitTarget: async (_record, target) => {
      admissions.push(target);
      return target.provider === provider ? refusal : undefined;
    },
  };
}

describe("hooks' admitTarget", () => {
  it('refusing one target moves the fallback to the next, which the provider alone sees', async () => {
    const admissions: TargetAdmission[] = [];
    const c = await compose(
      { 'x-gw-config': fallback({ provider: 'groq', api_key: 'a', override_params: { model: 'llama-3.3' } }, { provider: 'openai', api_key: 'b' }) },
      { hooks: [refusing('groq', admissions)] },
    );
    const outcome = await c.run();
    expect(outcome).toMatchObject({ status: 200, target: { path: 'config.targets[1]', provider: 'openai' } });
    expect(c.deps.upstream.sent.map(keyOf)).toEqual(['b']);
    // Each admission names the target as it will be called: its path, provider and the model it is sent.
    expect(admissions).toEqual([
      { targetPath: 'config.targets[0]', provider: 'groq', model: 'llama-3.3' },
      { targetPath: 'config.targets[1]', provider: 'openai', model: 'gpt-4o-mini' },
    ]);
  });

  it("refusing the only target is that target's answer: its status and error, no provider call", async () => {
    const c = await compose({ 'x-gw-provider': 'openai' }, { hooks: [refusing('openai', [], new RateLimitedError('Budget reached'))] });
    const outcome = await c.run();
    expect(outcome).toMatchObject({ status: 429, error: { message: 'Budget reached' } });
    expect(outcome.body).toBeUndefined();
    expect(c.deps.upstream.sent).toHaveLength(0);
  });

  it('throwing fails the request instead of falling back', async () => {
    const hook: GatewayHook = { name: 'broken', admitTarget: () => Promise.reject(new Error('counter unavailable')) };
    const c = await compose({ 'x-gw-config': fallback({ provider: 'openai', api_key: 'a' }, { provider: 'openai', api_key: 'b' }) }, { hooks: [hook] });
    await expect(c.run()).rejects.toThrow('counter unavailable');
    expect(c.deps.upstream.sent).toHaveLength(0);
  });
});

describe('guardrail hooks', () => {
  it('run outermost: a denying before-request hook refuses its target before any admission or provider call', async () => {
    const admissions: TargetAdmission[] = [];
    const deny = { type: 'guardrail', id: 'no-hi', deny: true, checks: [{ id: 'default.contains', parameters: { operator: 'none', words: ['Hi'] } }] };
    const c = await compose(
      { 'x-gw-config': fallback({ provider: 'openai', api_key: 'a', before_request_hooks: [deny] }, { provider: 'openai', api_key: 'b' }) },
      { hooks: [refusing('none', admissions)] },
    );
    const outcome = await c.run();
    expect(outcome).toMatchObject({ status: 200, target: { path: 'config.targets[1]' } });
    expect(admissions.map((a) => a.targetPath)).toEqual(['config.targets[1]']);
    expect(c.deps.upstream.sent.map(keyOf)).toEqual(['b']);
    expect(c.record.hookResults?.before_request_hooks).toMatchObject([{ id: 'no-hi', verdict: false, deny: true }]);
  });

  it('refuse a passthrough request to a target that denies it, with 403 naming the setting', async () => {
    const proxy: EndpointSpec = { endpoint: 'proxy', method: 'GET', body: 'none', stream: true };
    const c = await compose(
      { 'x-gw-config': JSON.stringify({ provider: 'openai', api_key: 'a', passthrough: 'deny' }) },
      { spec: proxy, body: undefined, path: '/vector_stores', route: { proxyPath: '/vector_stores' } },
    );
    await expect(c.run()).rejects.toMatchObject({ status: 403, param: 'config.passthrough', openaiCode: 'passthrough_denied' });
    expect(c.deps.upstream.sent).toHaveLength(0);
  });
});

describe('the other decorators', () => {
  it('note the model each target is sent (override_params) and fill provider options from headers', async () => {
    const c = await compose({
      'x-gw-config': JSON.stringify({ provider: 'openai', api_key: 'a', override_params: { model: 'gpt-4o' } }),
      'x-gw-openai-project': 'proj-7',
    });
    await c.run();
    expect(c.record).toMatchObject({ sentModel: 'gpt-4o', model: 'gpt-4o' });
    expect(c.deps.upstream.sent[0]?.headers['openai-project']).toBe('proj-7');
    expect(c.deps.upstream.sent[0]?.json).toMatchObject({ model: 'gpt-4o' });
  });
});
