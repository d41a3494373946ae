/**
 * The hooks of a config target, ready to run: its four lists (inherited as routing resolved them)
 * as hook specs, saved guardrails looked up by id or slug in the caller's workspace. HTTP requests
 * (guard.ts) and realtime sessions (realtime/guard.ts) resolve them here alike.
 */
import { ValidationError } from '../http/errors.ts';
import { DEFAULT_WINDOW, toHookEntries, type HookEntry, type HookListKey, type HookSpec } from '../guardrails/hooks.ts';
import type { SavedGuardrail } from '../kernel/guardrails.ts';
import type { GatewayPrincipal } from './access.ts';
import type { Flight } from './flight.ts';
import type { RoutedTarget } from './routing/inherit.ts';
import type { ResolvedTarget } from '../kernel/routing.ts';

export interface TargetHooks {
  before: HookSpec[];
  after: HookSpec[];
}

/** Saved guardrails looked up for one request, by name. */
export type SavedLookups = Map<string, Promise<SavedGuardrail | undefined>>;

const LISTS: ReadonlyArray<[HookListKey, 'before' | 'after']> = [
  ['before_request_hooks', 'before'],
  ['input_guardrails', 'before'],
  ['after_request_hooks', 'after'],
  ['output_guardrails', 'after'],
];

export async function targetHooks(f: Flight, principal: GatewayPrincipal, target: ResolvedTarget, saved: SavedLookups = new Map()): Promise<TargetHooks> {
  const lists = (target as Partial<RoutedTarget>).hooks;
  const out: TargetHooks = { before: [], after: [] };
  if (!lists) return out;
  for (const [key, side] of LISTS) {
    const list = lists[key];
    if (!list || list.length === 0) continue;
    for (const entry of toHookEntries(key, list, '')) out[side].push('saved' in entry ? await savedHook(f, principal, entry, saved) : entry);
  }
  return out;
}

async function savedHook(f: Flight, principal: GatewayPrincipal, ref: Extract<HookEntry, { saved: string }>, lookups: SavedLookups): Promise<HookSpec> {
  const source = f.deps.guardrails;
  if (!source) throw ValidationError.field(ref.path, `names the saved guardrail "${ref.saved}", but saved guardrails are not available here`);
  let found = lookups.get(ref.saved);
  if (!found) lookups.set(ref.saved, (found = source.forGateway(principal, ref.saved)));
  const saved = await found;
  if (!saved) throw ValidationError.field(ref.path, `no saved guardrail "${ref.saved}" in this workspace`);
  return {
    id: saved.slug || saved.id,
    type: 'guardrail',
    event: ref.event,
    checks: saved.checks,
    deny: saved.actions.deny,
    async: saved.actions.async,
    sequential: false,
    onSuccess: saved.actions.on_success,
    onFail: saved.actions.on_fail,
    window: DEFAULT_WINDOW,
    scope: 'all',
  };
}
