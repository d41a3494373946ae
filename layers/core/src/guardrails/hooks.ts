/**
 * The hook grammar of routing configs: `before_request_hooks` / `after_request_hooks` (hook
 * objects) and their shorthands `input_guardrails` / `output_guardrails` (objects whose keys are
 * check ids, `{"default.contains": {...}, "deny": true}`). In any list, a string (or `{id}` alone)
 * names a saved guardrail by id or slug. Validation here names the path of every problem; the
 * gateway turns validated lists into `HookSpec`s. Zod-free: the gateway bundle carries it.
 */
import type { FieldProblem } from '../http/errors.ts';
import type { CheckDefinition, CheckRef, GuardrailEvent } from '../kernel/guardrails.ts';
import type { TextScope } from './text.ts';

/** Looks a check up by id (the registry's `findCheck`, passed in: the gateway loads checks lazily). */
export type FindCheck = (id: string) => CheckDefinition | undefined;

export type HookListKey = 'before_request_hooks' | 'after_request_hooks' | 'input_guardrails' | 'output_guardrails';

/** Stream windows: characters checked at a time, and characters of context carried into the next check. */
export interface StreamWindow {
  size: number;
  context: number;
}

export const DEFAULT_WINDOW: StreamWindow = { size: 200, context: 50 };
export const MAX_WINDOW_SIZE = 100_000;

/** One hook ready to run. */
export interface HookSpec {
  id: string;
  type: 'guardrail' | 'mutator';
  event: GuardrailEvent;
  checks: CheckRef[];
  deny: boolean;
  async: boolean;
  sequential: boolean;
  onSuccess: { feedback?: unknown } | null;
  onFail: { feedback?: unknown } | null;
  window: StreamWindow;
  /** Which of the request's texts its checks read (before-request hooks): every one, or the last user turn. */
  scope: TextScope;
}

export const TEXT_SCOPES: readonly TextScope[] = ['all', 'last_user'];

/** A saved guardrail named in a list, resolved per request. */
export interface SavedRef {
  saved: string;
  /** Where the config names it (`targets[0].input_guardrails[1]`), for the 400 when it is unknown. */
  path: string;
  event: GuardrailEvent;
}

export type HookEntry = HookSpec | SavedRef;

const HOOK_FIELDS = ['type', 'id', 'checks', 'deny', 'async', 'sequential', 'on_fail', 'on_success', 'window', 'scope'] as const;
/** Shorthand entries: check ids (they contain a dot) plus these. */
const SHORTHAND_FIELDS = ['id', 'deny', 'async', 'sequential', 'on_fail', 'on_success', 'window', 'scope'] as const;
const CHECK_FIELDS = ['id', 'parameters', 'is_enabled'];

export const eventOf = (key: HookListKey): GuardrailEvent =>
  key === 'before_request_hooks' || key === 'input_guardrails' ? 'beforeRequestHook' : 'afterRequestHook';
const isShorthand = (key: HookListKey): boolean => key === 'input_guardrails' || key === 'output_guardrails';
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const join = (path: string, rest: string): string => (path === '' ? rest : `${path}.${rest}`);

/** A saved guardrail's id or slug when the entry names one: a string, or `{id}` with nothing else. */
export function savedName(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry;
  if (isRecord(entry) && typeof entry.id === 'string' && Object.keys(entry).length === 1) return entry.id;
  return undefined;
}

/**
 * Problems of one hook list's entries (paths relative to the config root); types are checked by the
 * node schema. Check ids and parameters are checked only when `find` is given.
 */
export function hookProblems(key: HookListKey, list: readonly unknown[], path: string, find?: FindCheck): FieldProblem[] {
  const problems: FieldProblem[] = [];
  list.forEach((entry, i) => {
    const at = `${join(path, key)}[${i}]`;
    if (typeof entry === 'string') {
      if (entry.trim() === '') problems.push({ path: at, message: 'must name a saved guardrail (id or slug)' });
      return;
    }
    if (!isRecord(entry) || savedName(entry) !== undefined) return;
    const checks: CheckProblems = { event: eventOf(key), find, problems };
    if (isShorthand(key)) shorthandProblems(entry, at, checks);
    else hookObjectProblems(entry, at, checks);
  });
  return problems;
}

interface CheckProblems {
  event: GuardrailEvent;
  find: FindCheck | undefined;
  problems: FieldProblem[];
}

function hookObjectProblems(hook: Record<string, unknown>, at: string, c: CheckProblems): void {
  const { problems } = c;
  for (const k of Object.keys(hook)) if (!(HOOK_FIELDS as readonly string[]).includes(k)) problems.push({ path: `${at}.${k}`, message: 'unknown key' });
  if (hook.type !== 'guardrail' && hook.type !== 'mutator') problems.push({ path: `${at}.type`, message: 'must be one of guardrail, mutator' });
  if (hook.id !== undefined && (typeof hook.id !== 'string' || hook.id === '')) problems.push({ path: `${at}.id`, message: 'must be a non-empty string' });
  if (!Array.isArray(hook.checks)) problems.push({ path: `${at}.checks`, message: hook.checks === undefined ? 'is required' : 'must be an array' });
  else hook.checks.forEach((ref: unknown, j) => checkRefProblems(ref, `${at}.checks[${j}]`, c));
  actionProblems(hook, at, problems);
}

function shorthandProblems(entry: Record<string, unknown>, at: string, c: CheckProblems): void {
  const { problems } = c;
  let checks = 0;
  for (const [k, v] of Object.entries(entry)) {
    if ((SHORTHAND_FIELDS as readonly string[]).includes(k)) continue;
    if (!k.includes('.')) {
      problems.push({ path: `${at}.${k}`, message: 'unknown key; expected a check id (default.contains ...) or a hook setting' });
      continue;
    }
    checks++;
    if (!isRecord(v)) problems.push({ path: `${at}.${k}`, message: 'must be an object of the check parameters' });
    else checkRefProblems({ id: k, parameters: v }, at, c, `${at}.${k}`);
  }
  if (checks === 0) problems.push({ path: at, message: 'names no check (keys such as "default.contains")' });
  if (entry.id !== undefined && (typeof entry.id !== 'string' || entry.id === '')) problems.push({ path: `${at}.id`, message: 'must be a non-empty string' });
  actionProblems(entry, at, problems);
}

/** `paramsAt`: where the parameters are (shorthand entries hold them under the check id). */
function checkRefProblems(c: unknown, at: string, cp: CheckProblems, paramsAt = `${at}.parameters`): void {
  const { problems, find, event } = cp;
  if (!isRecord(c)) {
    problems.push({ path: at, message: 'must be an object' });
    return;
  }
  if (paramsAt === `${at}.parameters`) {
    for (const k of Object.keys(c)) if (!CHECK_FIELDS.includes(k)) problems.push({ path: `${at}.${k}`, message: 'unknown key' });
  }
  if (c.is_enabled !== undefined && typeof c.is_enabled !== 'boolean') problems.push({ path: `${at}.is_enabled`, message: 'must be a boolean' });
  const idAt = paramsAt === `${at}.parameters` ? `${at}.id` : paramsAt;
  if (typeof c.id !== 'string' || c.id === '') {
    problems.push({ path: idAt, message: 'is required' });
    return;
  }
  if (!find) return;
  const def = find(c.id);
  if (!def) {
    problems.push({ path: idAt, message: `unknown check "${c.id}"` });
    return;
  }
  if (!def.events.includes(event)) problems.push({ path: idAt, message: `runs only in ${def.events.join(', ')}` });
  if (c.parameters !== undefined && !isRecord(c.parameters)) {
    problems.push({ path: paramsAt, message: 'must be an object' });
    return;
  }
  for (const p of def.validate(c.parameters ?? {})) problems.push({ path: p.path === '' ? paramsAt : `${paramsAt}.${p.path}`, message: p.message });
  const failOnError = (c.parameters as Record<string, unknown> | undefined)?.failOnError;
  if (failOnError !== undefined && typeof failOnError !== 'boolean') problems.push({ path: `${paramsAt}.failOnError`, message: 'must be a boolean' });
}

function actionProblems(hook: Record<string, unknown>, at: string, problems: FieldProblem[]): void {
  for (const k of ['deny', 'async', 'sequential']) {
    if (hook[k] !== undefined && typeof hook[k] !== 'boolean') problems.push({ path: `${at}.${k}`, message: 'must be a boolean' });
  }
  for (const k of ['on_fail', 'on_success']) {
    const v = hook[k];
    if (v !== undefined && v !== null && !isRecord(v)) problems.push({ path: `${at}.${k}`, message: 'must be an object ({"feedback": ...})' });
  }
  if (hook.scope !== undefined && !(TEXT_SCOPES as readonly unknown[]).includes(hook.scope))
    problems.push({ path: `${at}.scope`, message: `must be one of ${TEXT_SCOPES.join(', ')}` });
  const w = hook.window;
  if (w === undefined) return;
  if (!isRecord(w)) {
    problems.push({ path: `${at}.window`, message: 'must be an object ({"size": 200, "context": 50})' });
    return;
  }
  for (const k of Object.keys(w)) if (k !== 'size' && k !== 'context') problems.push({ path: `${at}.window.${k}`, message: 'unknown key' });
  const int = (v: unknown, min: number, max: number): boolean => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
  if (w.size !== undefined && !int(w.size, 1, MAX_WINDOW_SIZE))
    problems.push({ path: `${at}.window.size`, message: `must be an integer from 1 to ${MAX_WINDOW_SIZE}` });
  if (w.context !== undefined && !int(w.context, 0, MAX_WINDOW_SIZE))
    problems.push({ path: `${at}.window.context`, message: `must be an integer from 0 to ${MAX_WINDOW_SIZE}` });
}

/** A validated list as runnable entries. */
export function toHookEntries(key: HookListKey, list: readonly unknown[], path: string): HookEntry[] {
  const event = eventOf(key);
  return list.map((entry, i): HookEntry => {
    const at = `${join(path, key)}[${i}]`;
    const saved = savedName(entry);
    if (saved !== undefined) return { saved, path: at, event };
    const hook = entry as Record<string, unknown>;
    const checks: CheckRef[] = isShorthand(key)
      ? Object.entries(hook)
          .filter(([k]) => k.includes('.'))
          .map(([id, parameters]) => ({ id, parameters: parameters as Record<string, unknown> }))
      : (hook.checks as CheckRef[]).map((c) => ({ ...c, parameters: c.parameters ?? {} }));
    return {
      id: typeof hook.id === 'string' ? hook.id : at,
      type: hook.type === 'mutator' ? 'mutator' : 'guardrail',
      event,
      checks,
      deny: hook.deny === true,
      async: hook.async === true,
      sequential: hook.sequential === true,
      onSuccess: (hook.on_success as HookSpec['onSuccess'] | undefined) ?? null,
      onFail: (hook.on_fail as HookSpec['onFail'] | undefined) ?? null,
      window: windowOf(hook.window),
      scope: hook.scope === 'last_user' ? 'last_user' : 'all',
    };
  });
}

function windowOf(raw: unknown): StreamWindow {
  if (!isRecord(raw)) return DEFAULT_WINDOW;
  return {
    size: typeof raw.size === 'number' ? raw.size : DEFAULT_WINDOW.size,
    context: typeof raw.context === 'number' ? raw.context : DEFAULT_WINDOW.context,
  };
}
