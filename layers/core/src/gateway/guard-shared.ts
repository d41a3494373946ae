/**
 * What the hook decorator (guard.ts) and the stream guard (stream-guard.ts) share: the request's
 * hook state, the 446 answer, and how outcomes and check contexts are made.
 */
import { Readable } from 'node:stream';
import type { IncomingHttpHeaders } from 'node:http';
import type { CheckContext, GuardrailEvent, HookOutcome, SavedGuardrail } from '../kernel/guardrails.ts';
import type { HooksRun, RunnerDeps } from '../guardrails/runner.ts';
import { requestParts } from '../guardrails/text.ts';
import { providerRequestParts } from './provider-text.ts';
import type { GatewayPrincipal } from './access.ts';
import type { CallInput } from './call-target.ts';
import type { Flight } from './flight.ts';
import type { HookResults } from '../kernel/lifecycle.ts';
import type { Attempt } from './routing/execute.ts';
import type { ResolvedTarget } from '../kernel/routing.ts';

/** What one request's hooks share: the flight, the call (a mutator may replace its body), the deps. */
export interface Guarded {
  f: Flight;
  call: CallInput;
  runner: RunnerDeps;
  saved: Map<string, Promise<SavedGuardrail | undefined>>;
  principal: GatewayPrincipal;
}

/**
 * The hook results a client is shown once the answer was denied: the after-request checks' `data`
 * is left out, as it may quote what the model wrote (a vendor's assessment names the PII it found);
 * the log keeps it whole.
 */
export function shownResults(results: HookResults): HookResults {
  if (!results.after_request_hooks.some((h) => !h.verdict && h.deny)) return results;
  const after = results.after_request_hooks.map((h) => ({ ...h, checks: h.checks.map((c) => ({ ...c, data: null })) }));
  return { ...results, after_request_hooks: after };
}

/** The 446 answer: the error, and every hook's result. */
export function deniedAttempt(results: HookResults): Attempt {
  const failed = [...results.before_request_hooks, ...results.after_request_hooks].filter((h) => !h.verdict && h.deny).map((h) => h.id);
  const body = {
    error: { message: `The request was denied by a guardrail hook: ${failed.join(', ')}`, type: 'hooks_failed', param: null, code: 'hooks_failed' },
    hook_results: shownResults(results),
  };
  const bytes = Buffer.from(JSON.stringify(body));
  return { status: 446, headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) }, body: Readable.from([bytes]) };
}

export function withoutLength(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { 'content-length': _dropped, ...rest } = headers;
  return rest;
}

/** Outcomes into the record (the log); async hooks' outcomes join once they finish. */
export function noteRun(f: Flight, key: keyof HookResults, run: HooksRun, extra?: Partial<HookOutcome>): HookOutcome[] {
  const outcomes = extra ? run.outcomes.map((o) => ({ ...o, ...extra })) : run.outcomes;
  const all = (f.record.hookResults ??= { before_request_hooks: [], after_request_hooks: [] });
  all[key].push(...outcomes);
  run.later?.then(
    (late) => all[key].push(...late),
    () => undefined,
  );
  return outcomes;
}

/** What a check sees of this request (and, after the request, of the answer). */
export function contextOf(g: Guarded, target: ResolvedTarget, event: GuardrailEvent): CheckContext {
  const { f, call } = g;
  const json = call.body.kind === 'json' ? call.body.value : (f.record.request ?? {});
  const parts = providerRequestParts(f.spec.endpoint, call.subPath ?? '', call.body, json) ?? requestParts(f.spec.endpoint, json);
  return {
    event,
    requestType: f.spec.endpoint,
    provider: target.provider,
    metadata: f.record.metadata,
    request: { json, text: parts.map((p) => p.text).join('\n'), parts, scope: 'all', isStreamingRequest: f.record.stream },
  };
}
