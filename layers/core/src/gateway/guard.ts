/**
 * Guardrail hooks on each target call (a caller decorator, outermost in compose.ts): hooks live in
 * config targets, so each target runs its own. Before-request hooks run before the target is
 * called (a denial is a 446 answer, no provider called); after-request hooks run on its 2xx answer:
 * a JSON answer is read whole and checked, a stream goes through the window gate (stream-guard.ts).
 * As answers of the target, 446 and 246 are seen by retries and fallbacks (`on_status_codes`).
 * Every verdict goes into the record (`hookResults`) and so into the request's log.
 */
import { Readable } from 'node:stream';
import { UpstreamError } from '../http/errors.ts';
import { tryParseJson } from '../http/json.ts';
import { readCapped } from '../http/node-streams.ts';
import { createCheckDeps } from '../guardrails/check-deps.ts';
import type { HookSpec } from '../guardrails/hooks.ts';
import { findCheck } from '../guardrails/registry.ts';
import { runHooks } from '../guardrails/runner.ts';
import { responseText } from '../guardrails/text.ts';
import type { CallInput } from './call-target.ts';
import type { Flight } from './flight.ts';
import type { HookResults } from '../kernel/lifecycle.ts';
import type { GatewayPrincipal } from './access.ts';
import { readProvider } from './respond.ts';
import type { Attempt, TargetCaller } from './routing/execute.ts';
import type { ConfigNode, ResolvedTarget } from '../kernel/routing.ts';
import { configProblems } from './routing/validate.ts';
import { guardStream } from './stream-guard.ts';
import { targetHooks } from './target-hooks.ts';
import { contextOf, deniedAttempt, noteRun, withoutLength, type Guarded } from './guard-shared.ts';

export type { Guarded } from './guard-shared.ts';

const MAX_CHECKED_JSON = 16 << 20;

/** The hooks of each target (guard-entry.ts restores the request's body before each call). */
export function withHooks(inner: TargetCaller, f: Flight, call: CallInput, principal: GatewayPrincipal): TargetCaller {
  const g: Guarded = {
    f,
    call,
    principal,
    saved: new Map(),
    runner: { find: findCheck, check: createCheckDeps(f.deps.upstream, f.deps.trustedHosts, f.deps.clock) },
  };
  return async (target, signal) => {
    const hooks = await targetHooks(f, principal, target, g.saved);
    if (hooks.before.length === 0 && hooks.after.length === 0) return inner(target, signal);
    const results: HookResults = { before_request_hooks: [], after_request_hooks: [] };
    let flagged = false;
    if (hooks.before.length > 0) {
      const run = await runHooks(hooks.before, contextOf(g, target, 'beforeRequestHook'), g.runner);
      results.before_request_hooks = noteRun(f, 'before_request_hooks', run);
      if (run.denied) return deniedAttempt(results);
      flagged = run.failed;
      // A mutator's request is what this target is sent.
      if (run.transformed) call.body = { kind: 'json', value: { ...run.ctx.request.json }, text: JSON.stringify(run.ctx.request.json), rewritten: true };
    }
    const attempt = await inner(target, signal);
    if (!attempt.body || attempt.status < 200 || attempt.status >= 300) return attempt;
    const contentType = String(attempt.headers['content-type'] ?? '');
    if (contentType.includes('text/event-stream')) {
      if (hooks.after.length === 0) return flagged ? { ...attempt, status: 246 } : attempt;
      return guardStream(g, { attempt, target, hooks: hooks.after, results, flagged });
    }
    if (!/[/+]json\b/i.test(contentType) || (hooks.after.length === 0 && !flagged && target.strict_openai_compliance)) return attempt;
    return guardJson(g, attempt, target, hooks.after, results, flagged);
  };
}

/** A JSON answer read whole, checked by the after-request hooks, and answered 2xx, 246 or 446. */
async function guardJson(g: Guarded, attempt: Attempt, target: ResolvedTarget, after: HookSpec[], results: HookResults, flagged: boolean): Promise<Attempt> {
  const { bytes, truncated } = await readProvider(readCapped(attempt.body!, MAX_CHECKED_JSON));
  if (truncated) throw new UpstreamError(502, `The provider's answer is larger than ${MAX_CHECKED_JSON} bytes and cannot be checked by the hooks`);
  if (after.length === 0) return withResultsOnly(attempt, bytes, results, flagged);
  const parsed = tryParseJson(bytes.toString('utf8'));
  let value: unknown = parsed.ok ? parsed.value : undefined;
  let transformed = false;
  if (after.length > 0) {
    const text = parsed.ok ? responseText(value) : bytes.toString('utf8');
    const response = { json: value ?? null, text, statusCode: attempt.status };
    const run = await runHooks(after, { ...contextOf(g, target, 'afterRequestHook'), response }, g.runner);
    results.after_request_hooks = noteRun(g.f, 'after_request_hooks', run);
    if (run.denied) return deniedAttempt(results);
    flagged ||= run.failed;
    if (run.transformed) {
      value = run.ctx.response?.json;
      transformed = true;
    }
  }
  const withResults = flagged || !target.strict_openai_compliance;
  let out = bytes;
  if (withResults && value !== null && typeof value === 'object' && !Array.isArray(value))
    out = Buffer.from(JSON.stringify({ ...value, hook_results: results }));
  else if (transformed) out = Buffer.from(JSON.stringify(value));
  return { ...attempt, status: flagged ? 246 : attempt.status, headers: withoutLength(attempt.headers), body: Readable.from([out]) };
}

/**
 * Before-request hooks only: the answer's object gains `hook_results` without being parsed and
 * written again (the hot path of a request with input guardrails).
 */
function withResultsOnly(attempt: Attempt, bytes: Buffer, results: HookResults, flagged: boolean): Attempt {
  const headers = withoutLength(attempt.headers);
  const status = flagged ? 246 : attempt.status;
  const first = skipSpace(bytes, 0, 1);
  const last = skipSpace(bytes, bytes.length - 1, -1);
  if (bytes[first] !== OPEN || bytes[last] !== CLOSE || first >= last) return { ...attempt, status, headers, body: Readable.from([bytes]) };
  const empty = skipSpace(bytes, first + 1, 1) === last;
  const tail = Buffer.from(`${empty ? '' : ','}"hook_results":${JSON.stringify(results)}}`);
  return { ...attempt, status, headers, body: Readable.from([Buffer.concat([bytes.subarray(0, last), tail])]) };
}

const OPEN = 0x7b;
const CLOSE = 0x7d;
const SPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** The index of the first byte from `i` (walking by `step`) that is not JSON whitespace. */
function skipSpace(bytes: Buffer, i: number, step: 1 | -1): number {
  while (i >= 0 && i < bytes.length && SPACE.has(bytes[i]!)) i += step;
  return i;
}

/** Problems of a config's hooks against the checks (its other problems were reported when it was parsed). */
export function hookCheckProblems(config: ConfigNode) {
  return configProblems(config, { requestProvider: true, findCheck });
}
