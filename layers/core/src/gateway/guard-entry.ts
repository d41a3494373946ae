/**
 * Guardrail hooks as the pipeline sees them before any hook has run: the caller decorator that
 * imports the hook code (gateway/guard.ts, the checks, the stream gate) on the first target that
 * has hooks, and the check of a config's hooks against the checks, run in `resolve` once checks
 * are loaded. A request without hooks loads none of it. The decorator also refuses a passthrough
 * request a target denies (`passthrough: "deny"`) before any provider is called.
 */
import { ForbiddenError, ValidationError } from '../http/errors.ts';
import type { EndpointType } from '../providers/types.ts';
import type { CallInput } from './call-target.ts';
import type { Flight } from './flight.ts';
import type { GatewayPrincipal } from './access.ts';
import { HOOK_KEYS, type RoutedTarget, type TargetHooks } from './routing/inherit.ts';
import type { TargetCaller } from './routing/execute.ts';
import type { ConfigNode, ResolvedTarget } from '../kernel/routing.ts';

/** Endpoints whose requests and answers are text guardrails read. */
export const GUARDED: ReadonlySet<EndpointType> = new Set(['chatComplete', 'complete', 'createModelResponse', 'embed']);

/**
 * Endpoints in a provider's own format, whose requests the input hooks read when they carry a body
 * (gateway/provider-text.ts: the passthrough's every string, the assistants family's texts, the
 * batch lines of an upload); their answers pass as the provider sent them. The others run no hooks.
 */
export const INPUT_GUARDED: ReadonlySet<EndpointType> = new Set(['proxy', 'assistants', 'uploadFile']);

const loadGuard = () => import('./guard.ts');

const hasLists = (lists: Partial<Record<string, unknown[]>> | undefined): boolean => lists !== undefined && HOOK_KEYS.some((k) => (lists[k]?.length ?? 0) > 0);

/** Whether hooks run on this request at all. */
const hooksRun = (f: Flight): boolean => f.deps.config.features.guardrails && (GUARDED.has(f.spec.endpoint) || INPUT_GUARDED.has(f.spec.endpoint));

/** Whether the guard wraps this request's targets: its hooks, or a target's `passthrough: "deny"`. */
export const guarding = (f: Flight): boolean => hooksRun(f) || f.spec.endpoint === 'proxy';

/** The hook lists a target runs on this request; undefined when none. */
function hooksFor(f: Flight, call: CallInput, target: Partial<RoutedTarget>): TargetHooks | undefined {
  const hooks = target.hooks;
  if (!hooksRun(f) || !hasLists(hooks)) return undefined;
  if (!INPUT_GUARDED.has(f.spec.endpoint)) return hooks;
  // A read (no body) gives the hooks nothing to check, and a provider's own answer no known text.
  if (call.body.kind === 'none') return undefined;
  const before: TargetHooks = { before_request_hooks: hooks?.before_request_hooks, input_guardrails: hooks?.input_guardrails };
  return hasLists(before) ? before : undefined;
}

function passthroughDenied(target: ResolvedTarget): ForbiddenError {
  return new ForbiddenError(`The passthrough is denied by ${target.path}.passthrough ("deny"): send the request to one of the gateway's endpoints`, {
    param: `${target.path}.passthrough`,
    openaiCode: 'passthrough_denied',
  });
}

export function withGuardrails(inner: TargetCaller, f: Flight, call: CallInput, principal: GatewayPrincipal): TargetCaller {
  // A mutator may replace the body for its target; every other target gets the request as it came.
  const original = call.body;
  let guarded: Promise<TargetCaller> | undefined;
  return async (target, signal) => {
    if (f.spec.endpoint === 'proxy' && target.passthrough === 'deny') throw passthroughDenied(target);
    call.body = original;
    const hooks = hooksFor(f, call, target);
    if (!hooks) return inner(target, signal);
    guarded ??= loadGuard().then((m) => m.withHooks(inner, f, call, principal));
    return (await guarded)(hooks === (target as Partial<RoutedTarget>).hooks ? target : ({ ...target, hooks } as RoutedTarget), signal);
  };
}

function configHasHooks(node: ConfigNode): boolean {
  return hasLists(node as Partial<Record<string, unknown[]>>) || (node.targets?.some(configHasHooks) ?? false);
}

/** Configs whose hooks were checked against the checks (saved configs are cached objects). */
const checked = new WeakSet<ConfigNode>();

/** A config's hooks name checks that exist, with valid parameters: 400 naming each problem's path. */
export async function checkConfigHooks(f: Flight, config: ConfigNode): Promise<void> {
  if (!hooksRun(f) || checked.has(config) || !configHasHooks(config)) return;
  const problems = (await loadGuard()).hookCheckProblems(config);
  if (problems.length > 0) throw new ValidationError(problems, { param: 'x-gw-config', openaiCode: 'AB01' });
  checked.add(config);
}
