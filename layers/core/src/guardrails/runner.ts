/**
 * Runs the hooks of one event on one context. Mutator hooks run first, one after the other, each
 * seeing what the previous one made of the request or answer; guardrail hooks then run in parallel
 * on the result, their checks in parallel unless the hook is `sequential`. A check that throws
 * counts as passed unless its parameters say `failOnError: true` (its error is in the result
 * either way). Async hooks never hold the request: their outcomes arrive in `later`.
 */
import type { CheckContext, CheckDefinition, CheckDeps, CheckOutcome, CheckRef, CheckResult, HookOutcome } from './contract.ts';
import type { HookSpec } from './hooks.ts';
import { requestText, responseText } from './text.ts';

export interface RunnerDeps {
  find(id: string): CheckDefinition | undefined;
  check: CheckDeps;
}

export interface HooksRun {
  outcomes: HookOutcome[];
  /** Some hook failed. */
  failed: boolean;
  /** Some hook failed that denies. */
  denied: boolean;
  /** The context after the mutators (request or answer JSON changed when `transformed`). */
  ctx: CheckContext;
  transformed: boolean;
  /** Outcomes of async hooks, once they finish (never rejects). */
  later: Promise<HookOutcome[]> | undefined;
}

export async function runHooks(hooks: readonly HookSpec[], ctx: CheckContext, deps: RunnerDeps): Promise<HooksRun> {
  const sync = hooks.filter((h) => !h.async);
  const background = hooks.filter((h) => h.async);
  const outcomes: HookOutcome[] = [];
  let current = ctx;
  let transformed = false;
  for (const hook of sync.filter((h) => h.type === 'mutator')) {
    const run = await runHook(hook, current, deps);
    outcomes.push(run.outcome);
    if (run.ctx !== current) transformed = true;
    current = run.ctx;
  }
  const guards = await Promise.all(sync.filter((h) => h.type === 'guardrail').map((h) => runHook(h, current, deps)));
  for (const g of guards) outcomes.push(g.outcome);
  const later = background.length
    ? Promise.all(background.map((h) => runHook(h, current, deps).then((r) => r.outcome)))
    : undefined;
  return {
    outcomes,
    failed: outcomes.some((o) => !o.verdict),
    denied: outcomes.some((o) => !o.verdict && o.deny),
    ctx: current,
    transformed,
    later,
  };
}

async function runHook(hook: HookSpec, ctx: CheckContext, deps: RunnerDeps): Promise<{ outcome: HookOutcome; ctx: CheckContext }> {
  const started = deps.check.now();
  const enabled = hook.checks.filter((c) => c.is_enabled !== false);
  const checks: CheckOutcome[] = [];
  let current = ctx;
  if (hook.sequential || hook.type === 'mutator') {
    for (const ref of enabled) {
      const { outcome, result } = await runCheck(ref, current, deps);
      checks.push(outcome);
      current = applied(current, result);
    }
  } else {
    const runs = await Promise.all(enabled.map((ref) => runCheck(ref, ctx, deps)));
    for (const r of runs) checks.push(r.outcome);
  }
  const verdict = checks.every((c) => c.verdict);
  const action = verdict ? hook.onSuccess : hook.onFail;
  return {
    outcome: {
      id: hook.id,
      type: hook.type,
      verdict,
      deny: hook.deny,
      checks,
      feedback: action?.feedback ?? null,
      execution_time: deps.check.now() - started,
    },
    ctx: current,
  };
}

async function runCheck(ref: CheckRef, ctx: CheckContext, deps: RunnerDeps): Promise<{ outcome: CheckOutcome; result: CheckResult | undefined }> {
  const started = deps.check.now();
  const failOnError = ref.parameters.failOnError === true;
  const def = deps.find(ref.id);
  let result: CheckResult | undefined;
  let error: { message: string } | null = null;
  try {
    if (!def) throw new Error(`unknown check "${ref.id}"`);
    result = await def.run(ctx, ref.parameters, deps.check);
    error = result.error ?? null;
  } catch (err) {
    error = { message: err instanceof Error ? err.message : String(err) };
  }
  // An erroring check passes unless it says otherwise (a vendor outage must not stop all traffic).
  const verdict = result && !result.error ? result.verdict : !failOnError;
  const outcome: CheckOutcome = {
    id: ref.id,
    verdict,
    error,
    data: result?.data ?? null,
    execution_time: deps.check.now() - started,
    transformed: result?.transformed === true,
  };
  return { outcome, result };
}

/** The context with a mutator's changes applied (the texts follow the JSON). */
function applied(ctx: CheckContext, result: CheckResult | undefined): CheckContext {
  const t = result?.transformed ? result.transformedData : undefined;
  if (!t) return ctx;
  let next = ctx;
  if (t.request) next = { ...next, request: { ...next.request, json: t.request.json, text: requestText(ctx.requestType, t.request.json) } };
  if (t.response && next.response) next = { ...next, response: { ...next.response, json: t.response.json, text: responseText(t.response.json) } };
  return next;
}
