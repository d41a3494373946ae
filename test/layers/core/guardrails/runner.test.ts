import { describe, expect, it } from 'vitest';
import type { CheckContext, CheckDefinition } from '../../../../layers/core/src/kernel/guardrails.ts';
import { DEFAULT_WINDOW, type HookSpec } from '../../../../layers/core/src/guardrails/hooks.ts';
import { findCheck } from '../../../../layers/core/src/guardrails/registry.ts';
import { runHooks, type RunnerDeps } from '../../../../layers/core/src/guardrails/runner.ts';

const ctx: CheckContext = {
  event: 'beforeRequestHook',
  requestType: 'chatComplete',
  provider: 'openai',
  metadata: {},
  request: {
    json: { model: 'm', messages: [{ role: 'user', content: 'my secret plan' }] },
    text: 'my secret plan',
    parts: [{ role: 'user', text: 'my secret plan' }],
    scope: 'all',
    isStreamingRequest: false,
  },
};

const hook = (checks: HookSpec['checks'], extra: Partial<HookSpec> = {}): HookSpec => ({
  id: 'h',
  type: 'guardrail',
  event: 'beforeRequestHook',
  checks,
  deny: false,
  async: false,
  sequential: false,
  onSuccess: null,
  onFail: null,
  window: DEFAULT_WINDOW,
  scope: 'all',
  ...extra,
});

/** Checks of this test's own: one that throws, one that records order, one mutator. */
function testDeps(order: string[] = []): RunnerDeps {
  const extra: Record<string, CheckDefinition> = {
    'test.throws': { id: 'test.throws', events: ['beforeRequestHook'], validate: () => [], run: async () => Promise.reject(new Error('vendor down')) },
    'test.slow': {
      id: 'test.slow',
      events: ['beforeRequestHook'],
      validate: () => [],
      run: async (_c, p) => {
        order.push(`start ${String(p.name)}`);
        await new Promise((r) => setImmediate(r));
        order.push(`end ${String(p.name)}`);
        return { verdict: true };
      },
    },
    'test.upper': {
      id: 'test.upper',
      events: ['beforeRequestHook'],
      validate: () => [],
      run: async (c) => ({
        verdict: true,
        transformed: true,
        transformedData: { request: { json: { ...c.request.json, messages: [{ role: 'user', content: c.request.text.toUpperCase() }] } } },
      }),
    },
  };
  let t = 0;
  return { find: (id) => extra[id] ?? findCheck(id), check: { now: () => (t += 1), fetch: () => Promise.reject(new Error('no network here')) } };
}

const containsNone = (words: string[]) => ({ id: 'default.contains', parameters: { operator: 'none', words } });

describe('hook runner', () => {
  it('gives results per check and per hook; only a failed denying hook denies', async () => {
    const run = await runHooks(
      [
        hook([containsNone(['secret'])], { id: 'deny', deny: true, onFail: { feedback: { value: -1 } } }),
        hook([containsNone(['nothing'])], { id: 'ok', deny: true }),
      ],
      ctx,
      testDeps(),
    );
    expect(run).toMatchObject({ failed: true, denied: true, transformed: false });
    expect(run.outcomes[0]).toMatchObject({ id: 'deny', type: 'guardrail', verdict: false, deny: true, feedback: { value: -1 } });
    expect(run.outcomes[0]?.checks[0]).toMatchObject({ id: 'default.contains', verdict: false, error: null, transformed: false, data: { found: ['secret'] } });
    expect(run.outcomes[1]).toMatchObject({ id: 'ok', verdict: true, feedback: null });
    expect(typeof run.outcomes[0]?.execution_time).toBe('number');

    const flagged = await runHooks([hook([containsNone(['secret'])])], ctx, testDeps());
    expect(flagged).toMatchObject({ failed: true, denied: false });
  });

  it('passes a check that errors unless failOnError is set, keeping the error', async () => {
    const open = await runHooks([hook([{ id: 'test.throws', parameters: {} }], { deny: true })], ctx, testDeps());
    expect(open.denied).toBe(false);
    expect(open.outcomes[0]?.checks[0]).toMatchObject({ verdict: true, error: { message: 'vendor down' } });
    const closed = await runHooks([hook([{ id: 'test.throws', parameters: { failOnError: true } }], { deny: true })], ctx, testDeps());
    expect(closed.denied).toBe(true);
    expect(closed.outcomes[0]?.checks[0]).toMatchObject({ verdict: false, error: { message: 'vendor down' } });
  });

  it('runs checks in parallel, or one after the other when the hook is sequential; skips disabled ones', async () => {
    const checks = [1, 2].map((n) => ({ id: 'test.slow', parameters: { name: n } }));
    const parallel: string[] = [];
    await runHooks([hook(checks)], ctx, testDeps(parallel));
    expect(parallel).toEqual(['start 1', 'start 2', 'end 1', 'end 2']);
    const sequential: string[] = [];
    await runHooks([hook([...checks, { id: 'test.slow', parameters: { name: 3 }, is_enabled: false }], { sequential: true })], ctx, testDeps(sequential));
    expect(sequential).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
  });

  it('runs mutators first and guardrails on what they made', async () => {
    const run = await runHooks(
      [hook([containsNone(['SECRET'])], { id: 'guard', deny: true }), hook([{ id: 'test.upper', parameters: {} }], { id: 'upper', type: 'mutator' })],
      ctx,
      testDeps(),
    );
    expect(run.outcomes.map((o) => o.id)).toEqual(['upper', 'guard']);
    expect(run.transformed).toBe(true);
    expect(run.ctx.request.text).toBe('MY SECRET PLAN');
    expect(run.denied).toBe(true);
  });

  it('never holds the request for async hooks; their outcomes come later', async () => {
    const run = await runHooks([hook([containsNone(['secret'])], { id: 'later', async: true, deny: true })], ctx, testDeps());
    expect(run.outcomes).toEqual([]);
    expect(run.denied).toBe(false);
    expect((await run.later)?.[0]).toMatchObject({ id: 'later', verdict: false });
  });
});
