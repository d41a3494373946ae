/**
 * Conditional routing: MongoDB-like queries over `metadata.*`, `params.*` and `url.pathname`.
 *
 * Semantics (docs/design/reference-behaviour.md#conditional-routing, fixing the peer's shortcuts):
 * - a key is a dotted path resolved at any depth; numeric segments index arrays; a key that itself
 *   contains dots (metadata such as `app.version`) is found too;
 * - a bare value means `$eq`; several keys, and several operators on one key, are ANDed;
 * - `$and` / `$or` take sub-queries and their sibling keys still apply;
 * - `$eq` deep-equals objects and arrays; `null` also matches a missing field, as in MongoDB, so
 *   `$ne` / `$nin` on a missing field are true unless they name null;
 * - ordering operators compare numbers with numbers and strings with strings; anything else is
 *   false, never an exception;
 * - whatever validation would reject (an unknown operator, a bad regex) fails closed: the query
 *   does not match.
 * Queries compile once (regexes included) and are cached per query / strategy object.
 */
import { isRecord } from '../../http/json.ts';
import type { ConditionContext, ConfigNode, Strategy } from '../../kernel/routing.ts';

export type CompiledQuery = (ctx: ConditionContext) => boolean;
type Test = (value: unknown) => boolean;

/** Operators allowed on a field. */
export const FIELD_OPERATORS: readonly string[] = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$regex'];
/** Operators allowed as query keys, combining sub-queries. */
export const LOGICAL_OPERATORS: readonly string[] = ['$and', '$or'];
/** Longest `$regex` pattern accepted: bounds the size of what a config can make us backtrack over. */
export const MAX_REGEX_LENGTH = 512;

const ALWAYS: CompiledQuery = () => true;
const NEVER: CompiledQuery = () => false;
const NEVER_TEST: Test = () => false;

/** An object whose keys are operators (`{ $gt: 1 }`), as opposed to a bare object value. */
export function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (!isRecord(value)) return false;
  for (const key in value) if (key.startsWith('$')) return true;
  return false;
}

function allOf<T>(tests: readonly ((x: T) => boolean)[]): (x: T) => boolean {
  return (x) => {
    for (const test of tests) if (!test(x)) return false;
    return true;
  };
}

/** Compiles a query once; the result evaluates it against a request without further parsing. */
export function compileQuery(query: Record<string, unknown>): CompiledQuery {
  const parts: CompiledQuery[] = [];
  for (const [key, value] of Object.entries(query)) {
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value)) return NEVER;
      const subs = value.map((q) => (isRecord(q) ? compileQuery(q) : NEVER));
      parts.push(key === '$and' ? allOf(subs) : (ctx) => subs.some((sub) => sub(ctx)));
    } else if (key.startsWith('$')) {
      return NEVER;
    } else {
      const get = compilePath(key);
      const test = compileFieldTest(value);
      parts.push((ctx) => test(get(ctx)));
    }
  }
  if (parts.length === 0) return ALWAYS;
  return parts.length === 1 ? (parts[0] as CompiledQuery) : allOf(parts);
}

function compileFieldTest(condition: unknown): Test {
  if (!isOperatorObject(condition)) return (value) => equals(value, condition);
  const tests = Object.entries(condition).map(([op, operand]) => compileOperator(op, operand));
  return tests.length === 1 ? (tests[0] as Test) : allOf(tests);
}

function compileOperator(op: string, operand: unknown): Test {
  switch (op) {
    case '$eq':
      return (value) => equals(value, operand);
    case '$ne':
      return (value) => !equals(value, operand);
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      if (typeof operand !== 'number' && typeof operand !== 'string') return NEVER_TEST;
      const accept = ORDER[op as keyof typeof ORDER];
      return (value) => {
        const c = compare(value, operand);
        return c !== undefined && accept(c);
      };
    }
    case '$in':
    case '$nin': {
      if (!Array.isArray(operand)) return NEVER_TEST;
      const want = op === '$in';
      return (value) => operand.some((item) => equals(value, item)) === want;
    }
    case '$regex': {
      if (typeof operand !== 'string' || operand.length > MAX_REGEX_LENGTH) return NEVER_TEST;
      let re: RegExp;
      try {
        re = new RegExp(operand);
      } catch {
        return NEVER_TEST;
      }
      return (value) => typeof value === 'string' && re.test(value);
    }
    default:
      return NEVER_TEST;
  }
}

const ORDER = {
  $gt: (c) => c > 0,
  $gte: (c) => c >= 0,
  $lt: (c) => c < 0,
  $lte: (c) => c <= 0,
} as const satisfies Readonly<Record<string, (c: number) => boolean>>;

/** Sign of a - b for two numbers or two strings; undefined when they cannot be ordered. */
function compare(a: unknown, b: number | string): number | undefined {
  if (typeof a !== typeof b) return undefined;
  if (typeof a === 'number') return a < (b as number) ? -1 : a > (b as number) ? 1 : a === b ? 0 : undefined;
  if (typeof a === 'string') return a < (b as string) ? -1 : a > (b as string) ? 1 : 0;
  return undefined;
}

/** Query equality: null stands for "null or missing", everything else deep-equals. */
function equals(value: unknown, expected: unknown): boolean {
  if (expected === null) return value === null || value === undefined;
  return deepEqual(value, expected);
}

// Recursion only continues while both sides are objects, so it is bounded by the query operand's
// depth, which validation limits.
function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = Object.keys(ra);
  if (keys.length !== Object.keys(rb).length) return false;
  for (const key of keys) if (!Object.hasOwn(rb, key) || !deepEqual(ra[key], rb[key])) return false;
  return true;
}

const INDEX = /^(?:0|[1-9][0-9]*)$/;

function compilePath(path: string): (ctx: ConditionContext) => unknown {
  const segments = path.split('.');
  return (ctx) => resolve(ctx, segments, 0);
}

// Own properties only: a query must not reach `constructor` or `__proto__` through the prototype.
function resolve(node: unknown, segments: readonly string[], from: number): unknown {
  let current = node;
  for (let i = from; i < segments.length; i++) {
    const segment = segments[i] as string;
    if (Array.isArray(current)) {
      if (!INDEX.test(segment)) return undefined;
      current = current[Number(segment)];
    } else if (isRecord(current)) {
      if (Object.hasOwn(current, segment)) current = current[segment];
      else return resolveDottedKey(current, segments, i);
    } else {
      return undefined;
    }
  }
  return current;
}

/** `metadata.app.version` when metadata holds the key `app.version`: try the joined segments. */
function resolveDottedKey(node: Record<string, unknown>, segments: readonly string[], at: number): unknown {
  let key = segments[at] as string;
  for (let j = at + 1; j < segments.length; j++) {
    key += `.${segments[j] as string}`;
    if (Object.hasOwn(node, key)) return resolve(node[key], segments, j + 1);
  }
  return undefined;
}

const compiledQueries = new WeakMap<object, CompiledQuery>();

/** Whether a request matches a query; the query is compiled on first use and cached by identity. */
export function matches(query: Record<string, unknown>, ctx: ConditionContext): boolean {
  let compiled = compiledQueries.get(query);
  if (!compiled) {
    compiled = compileQuery(query);
    compiledQueries.set(query, compiled);
  }
  return compiled(ctx);
}

export type CompiledConditional = (ctx: ConditionContext) => number | undefined;

/**
 * Compiles a conditional strategy against its direct targets: the result answers the index of
 * the target to use. Conditions naming no target (a validated config has none) are skipped.
 */
export function compileConditional(strategy: Strategy, targets: readonly ConfigNode[]): CompiledConditional {
  const indexOf = (name: string | undefined): number | undefined => {
    if (name === undefined) return undefined;
    const i = targets.findIndex((t) => t.name === name);
    return i < 0 ? undefined : i;
  };
  const rules: { test: CompiledQuery; index: number }[] = [];
  for (const condition of strategy.conditions ?? []) {
    const index = indexOf(condition.then);
    if (index !== undefined && isRecord(condition.query)) rules.push({ test: compileQuery(condition.query), index });
  }
  const fallback = indexOf(strategy.default);
  return (ctx) => {
    for (const rule of rules) if (rule.test(ctx)) return rule.index;
    return fallback;
  };
}

const compiledStrategies = new WeakMap<Strategy, { targets: readonly ConfigNode[]; pick: CompiledConditional }>();

/** Index of the target a conditional node routes to: the first matching condition, else `default`. */
export function pickConditional(strategy: Strategy, targets: readonly ConfigNode[], ctx: ConditionContext): number | undefined {
  let entry = compiledStrategies.get(strategy);
  if (!entry || entry.targets !== targets) {
    entry = { targets, pick: compileConditional(strategy, targets) };
    compiledStrategies.set(strategy, entry);
  }
  return entry.pick(ctx);
}
