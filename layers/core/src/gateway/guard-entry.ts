/**
 * Guardrail hooks as the pipeline sees them before any hook has run: the caller decorator that
 * imports the hook code (gateway/guard.ts, the checks, the stream gate) on the first target that
 * has hooks, and the check of a config's hooks against the checks, run in `resolve` once checks
 * are loaded. A request without hooks loads none of it.
 */
import { ValidationError } from '../http/errors.ts';
import type { EndpointType } from '../providers/types.ts';
import type { CallInput } from './call-target.ts';
import type { Flight } from './flight.ts';
import type { GatewayPrincipal } from './access.ts';
import { HOOK_KEYS, type RoutedTarget } from './routing/inherit.ts';
import type { TargetCaller } from './routing/execute.ts';
import type { ConfigNode } from './routing/types.ts';

/** Endpoints whose requests and answers are text guardrails read; the others run no hooks. */
export const GUARDED: ReadonlySet<EndpointType> = new Set(['chatComplete', 'complete', 'createModelResponse', 'embed']);

const loadGuard = () => import('./guard.ts');

const hasLists = (lists: Partial<Record<string, unknown[]>> | undefined): boolean =>
  lists !== undefined && HOOK_KEYS.some((k) => (lists[k]?.length ?? 0) > 0);

/** Whether hooks run on this request at all. */
export const guarding = (f: Flight): boolean => f.deps.config.features.guardrails && GUARDED.has(f.spec.endpoint);

export function withGuardrails(inner: TargetCaller, f: Flight, call: CallInput, principal: GatewayPrincipal): TargetCaller {
  // A mutator may replace the body for its target; every other target gets the request as it came.
  const original = call.body;
  let guarded: Promise<TargetCaller> | undefined;
  return async (target, signal) => {
    call.body = original;
    if (!hasLists((target as Partial<RoutedTarget>).hooks)) return inner(target, signal);
    guarded ??= loadGuard().then((m) => m.withHooks(inner, f, call, principal));
    return (await guarded)(target, signal);
  };
}

function configHasHooks(node: ConfigNode): boolean {
  return hasLists(node as Partial<Record<string, unknown[]>>) || (node.targets?.some(configHasHooks) ?? false);
}

/** Configs whose hooks were checked against the checks (saved configs are cached objects). */
const checked = new WeakSet<ConfigNode>();

/** A config's hooks name checks that exist, with valid parameters: 400 naming each problem's path. */
export async function checkConfigHooks(f: Flight, config: ConfigNode): Promise<void> {
  if (!guarding(f) || checked.has(config) || !configHasHooks(config)) return;
  const problems = (await loadGuard()).hookCheckProblems(config);
  if (problems.length > 0) throw new ValidationError(problems, { param: 'x-gw-config', openaiCode: 'AB01' });
  checked.add(config);
}
