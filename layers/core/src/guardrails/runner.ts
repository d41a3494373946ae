/**
 * Runs the hooks of one event on one context. Mutator hooks run first, one after the other, each
 * seeing what the previous one made of the request or answer; guardrail hooks then run in parallel
 * on the result, their checks in parallel unless the hook is `sequential`. A check that throws
 * counts as passed unless its parameters say `failOnError: true` (its error is in the result
 * either way). Async hooks never hold the request: their outcomes arrive in `later`.
 */
import type { CheckContext, CheckDefinition, CheckDeps, CheckOutcome, CheckRef, CheckResult, HookOutcome } from '../kernel/guardrails.ts';
import type { HookSpec } from './hooks.ts';
import { mapRequestText, requestParts, responseText, type TextScope } from './text.ts';

const keep = (t: string): string => t;

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

export interface RunOptions {
  /**
   * Whether rewrites can take effect (false on a streamed answer, whose text was sent): when they
   * cannot, no outcome claims `transformed`.
   */
  applies: boolean;
}

export async function runHooks(hooks: readonly HookSpec[], ctx: CheckContext, deps: RunnerDeps, options: RunOptions = { applies: true }): Promise<HooksRun> {
  const sync = hooks.filter((h) => !h.async);
  const background = hooks.filter((h) => h.async);
  // Hooks that may rewrite run one after the other (mutators first), each on what the previous made;
  // the others then check the result in parallel.
  const rewriting = [...sync.filter((h) => h.type === 'mutator'), ...sync.filter((h) => h.type === 'guardrail' && mayTransform(h, deps))];
  const outcomes: HookOutcome[] = [];
  let current = ctx;
  for (const hook of rewriting) {
    const run = await runHook(hook, current, deps);
    outcomes.push(run.outcome);
    current = run.ctx;
  }
  const guards = await Promise.all(sync.filter((h) => !rewriting.includes(h)).map((h) => runHook(h, current, deps)));
  for (const g of guards) outcomes.push(g.outcome);
  // Async hooks never hold the request, so their rewrites never reach it.
  const later = background.length ? Promise.all(background.map((h) => runHook(h, current, deps).then((r) => untransformed(r.outcome)))) : undefined;
  return {
    outcomes: options.applies ? outcomes : outcomes.map(untransformed),
    failed: outcomes.some((o) => !o.verdict),
    denied: outcomes.some((o) => !o.verdict && o.deny),
    ctx: current,
    transformed: current.request.json !== ctx.request.json || current.response?.json !== ctx.response?.json,
    later,
  };
}

const untransformed = (o: HookOutcome): HookOutcome =>
  o.checks.some((c) => c.transformed) ? { ...o, checks: o.checks.map((c) => ({ ...c, transformed: false })) } : o;

const enabledChecks = (hook: HookSpec): CheckRef[] => hook.checks.filter((c) => c.is_enabled !== false);

function mayTransform(hook: HookSpec, deps: RunnerDeps): boolean {
  return enabledChecks(hook).some((c) => deps.find(c.id)?.transforms === true);
}

/** The context as a hook of `scope` reads it (the request's texts narrowed or widened). */
function scoped(ctx: CheckContext, scope: TextScope): CheckContext {
  // Requests this module has no text definition for (the passthrough, assistants, realtime events)
  // came with their parts from their own reader: a scope cannot narrow them here.
  if (ctx.request.scope === scope || mapRequestText(ctx.requestType, ctx.request.json, keep) === undefined) return ctx;
  const parts = requestParts(ctx.requestType, ctx.request.json, scope);
  return { ...ctx, request: { ...ctx.request, scope, parts, text: parts.map((p) => p.text).join('\n') } };
}

async function runHook(hook: HookSpec, given: CheckContext, deps: RunnerDeps): Promise<{ outcome: HookOutcome; ctx: CheckContext }> {
  const started = deps.check.now();
  const ctx = scoped(given, hook.event === 'beforeRequestHook' ? hook.scope : 'all');
  const enabled = enabledChecks(hook);
  const checks: CheckOutcome[] = [];
  let current = ctx;
  if (hook.sequential || hook.type === 'mutator' || mayTransform(hook, deps)) {
    for (const ref of enabled) {
      const { outcome, result } = await runCheck(ref, current, deps);
      const next = applied(current, result);
      // A rewrite that left the JSON as it was is no transformation.
      checks.push(next === current && outcome.transformed ? { ...outcome, transformed: false } : outcome);
      current = next;
    }
  } else {
    const runs = await Promise.all(enabled.map((ref) => runCheck(ref, ctx, deps)));
    // Checks that do not declare rewrites have them ignored, and say so.
    for (const r of runs) checks.push(r.outcome.transformed ? { ...r.outcome, transformed: false } : r.outcome);
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
    ctx: current === ctx ? given : scoped(current, given.request.scope),
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
  if (t.request && t.request.json !== ctx.request.json) {
    const parts = requestParts(ctx.requestType, t.request.json, ctx.request.scope);
    next = { ...next, request: { ...next.request, json: t.request.json, parts, text: parts.map((p) => p.text).join('\n') } };
  }
  if (t.response && next.response && t.response.json !== next.response.json)
    next = { ...next, response: { ...next.response, json: t.response.json, text: responseText(t.response.json) } };
  return next;
}
