/**
 * Per-target admission: before each target is called, every hook with `admitTarget` may refuse it
 * (a managed provider's exhausted budget, say). A refusal is answered as that target's attempt, so
 * a fallback goes on to its next target; a thrown error fails the request.
 */
import type { GatewayHook, GatewayRecord, TargetAdmission } from '../kernel/lifecycle.ts';
import type { TargetCaller } from './routing/execute.ts';
import type { ResolvedTarget } from '../kernel/routing.ts';

function admissionOf(target: ResolvedTarget, params: Readonly<Record<string, unknown>>): TargetAdmission {
  const model = target.override_params.model ?? params.model;
  const admission: TargetAdmission = { targetPath: target.path, provider: target.provider, model: typeof model === 'string' ? model : undefined };
  if (target.budget) admission.budget = target.budget;
  return admission;
}

export function withTargetAdmission(
  inner: TargetCaller,
  hooks: readonly GatewayHook[],
  record: GatewayRecord,
  params: Readonly<Record<string, unknown>>,
): TargetCaller {
  const admitting = hooks.filter((h) => h.admitTarget !== undefined);
  if (admitting.length === 0) return inner;
  return async (target, signal) => {
    const admission = admissionOf(target, params);
    for (const hook of admitting) {
      const refusal = await hook.admitTarget?.(record, admission);
      if (refusal) return { status: refusal.status, headers: {}, error: refusal, target };
    }
    return inner(target, signal);
  };
}
