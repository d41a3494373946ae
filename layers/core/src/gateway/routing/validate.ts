/**
 * Validation of routing configs (x-gw-config, saved configs, key defaults). Every problem is
 * reported in one go with its path relative to the config root (`targets[1].weight`,
 * `strategy.conditions[0].query.params.x.$foo`). Field shapes are zod schemas applied node by
 * node; the walk over targets is done here so that depth and size are bounded before any work is
 * spent on them, and so that rules spanning nodes (target names, inheritance of the provider)
 * can see the whole tree.
 */
import * as z from 'zod/mini';
import { ValidationError, type FieldProblem } from '../../http/errors.ts';
import { isRecord } from '../../http/json.ts';
import { suggestion } from '../../http/suggest.ts';
import { integerAtLeast, integerBetween, numberBetween, PARSE_CONTEXT, problemsFromZod, typeMessage } from '../validate/common.ts';
import { FIELD_OPERATORS, isOperatorObject, LOGICAL_OPERATORS, MAX_REGEX_LENGTH } from './conditions.ts';
import { hookProblems, type FindCheck } from '../../guardrails/hooks.ts';
import { isSendable, UNSENDABLE_MESSAGE } from '../headers.ts';
import { CONFIG_KEYS, HOOK_KEYS } from './inherit.ts';
import { PASSTHROUGH_SETTINGS, type ConfigNode, type StrategyMode } from '../../kernel/routing.ts';

/** Deepest nesting of targets below the root. */
export const MAX_DEPTH = 10;
/** Most targets one config may hold, all levels together. */
export const MAX_TARGETS = 100;
/** Deepest nesting of `$and` / `$or` in a condition. */
export const MAX_QUERY_DEPTH = 10;
/** Deepest JSON value a query compares against (bounds the deep-equality recursion). */
export const MAX_VALUE_DEPTH = 32;
export const CONFIG_HEADER = 'x-gw-config';

const MODES: readonly StrategyMode[] = ['single', 'loadbalance', 'fallback', 'conditional'];
const CACHE_MODES = ['simple', 'semantic'] as const;
const QUERY_ROOTS: ReadonlySet<string> = new Set(['metadata', 'params', 'url']);

// ---- Field schemas ---------------------------------------------------------------------------

/** An enum whose absence reads "is required" rather than listing the values. */
const requiredOr = (iss: z.core.$ZodRawIssue): string | undefined => (iss.input === undefined ? 'is required' : undefined);

/** An integer in [min, max] with one problem per value, naming the bound that was crossed. */
function integerIn(min: number, max: number) {
  return z.number({ error: typeMessage('must be an integer') }).check((payload) => {
    const v = payload.value;
    const message = !Number.isInteger(v) ? 'must be an integer' : v < min ? `must be at least ${min}` : v > max ? `must be at most ${max}` : undefined;
    if (message) payload.issues.push({ code: 'custom', message, input: v });
  });
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

// Syntax only: whether the host may be called (SSRF) is decided at call time.
const httpUrl = z.string().check((payload) => {
  if (!isHttpUrl(payload.value)) payload.issues.push({ code: 'custom', message: 'must be an http or https URL', input: payload.value });
});

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const nonEmpty = z.string().check(z.minLength(1));
/** A value sent to a provider in a header (a key): one that could not be sent is refused here, not by the HTTP client. */
const headerValue = nonEmpty.check((payload) => {
  if (!isSendable(payload.value)) payload.issues.push({ code: 'custom', message: UNSENDABLE_MESSAGE, input: payload.value });
});
const statusCode = integerBetween(100, 599);
const hookList = z.array(z.union([z.string(), z.looseObject({})], { error: typeMessage('must be a string or an object') }));

const strategySchema = z.looseObject({
  mode: z.enum(MODES as [StrategyMode, ...StrategyMode[]], { error: requiredOr }),
  on_status_codes: z.optional(z.array(statusCode)),
  conditions: z.optional(z.array(z.looseObject({ query: z.looseObject({}), then: nonEmpty })).check(z.minLength(1))),
  default: z.optional(nonEmpty),
});

const retrySchema = z.looseObject({
  attempts: integerIn(0, 5),
  on_status_codes: z.optional(z.array(statusCode)),
  use_retry_after_header: z.optional(z.boolean()),
});

const cacheSchema = z.looseObject({
  mode: z.enum(CACHE_MODES, { error: requiredOr }),
  max_age: z.optional(integerAtLeast(1)),
  similarity_threshold: z.optional(numberBetween(0, 1)),
  embedding: z.optional(z.looseObject({ provider: nonEmpty, model: nonEmpty, api_key: z.optional(headerValue), custom_host: z.optional(httpUrl) })),
});

/** One node's own fields; its targets are walked separately. */
const nodeSchema = z.looseObject({
  strategy: z.optional(strategySchema),
  targets: z.optional(z.array(z.unknown()).check(z.minLength(1))),
  name: z.optional(nonEmpty),
  weight: z.optional(z.number().check(z.gte(0, { error: 'must be >= 0' }))),
  provider: z.optional(nonEmpty),
  api_key: z.optional(headerValue),
  virtual_key: z.optional(nonEmpty),
  override_params: z.optional(z.looseObject({})),
  retry: z.optional(retrySchema),
  request_timeout: z.optional(integerBetween(1, 900_000)),
  cache: z.optional(cacheSchema),
  custom_host: z.optional(httpUrl),
  forward_headers: z.optional(z.array(z.string().check(z.regex(HEADER_NAME, { error: 'must be a header name' })))),
  strict_openai_compliance: z.optional(z.boolean()),
  passthrough: z.optional(z.enum(PASSTHROUGH_SETTINGS)),
  before_request_hooks: z.optional(hookList),
  after_request_hooks: z.optional(hookList),
  input_guardrails: z.optional(hookList),
  output_guardrails: z.optional(hookList),
});

// ---- Unknown keys ----------------------------------------------------------------------------

const NODE_KEYS: readonly string[] = [...CONFIG_KEYS];
const STRATEGY_KEYS: readonly string[] = ['mode', 'on_status_codes', 'conditions', 'default'];
const CONDITION_KEYS: readonly string[] = ['query', 'then'];
const RETRY_KEYS: readonly string[] = ['attempts', 'on_status_codes', 'use_retry_after_header'];
const CACHE_KEYS: readonly string[] = ['mode', 'max_age', 'similarity_threshold', 'embedding'];
const EMBEDDING_KEYS: readonly string[] = ['provider', 'model', 'api_key', 'custom_host'];

/**
 * Node keys that belong one level down (or to the peer's legacy format), or common guesses too far
 * from the right name for the typo check: say what was meant.
 */
const NODE_HINTS: ReadonlyMap<string, string> = new Map([
  ['mode', 'strategy.mode'],
  ['conditions', 'strategy.conditions'],
  ['default', 'strategy.default'],
  ['on_status_codes', 'strategy.on_status_codes'],
  ['attempts', 'retry.attempts'],
  ['max_age', 'cache.max_age'],
  ['options', 'targets'],
  ['retries', 'retry'],
  ['timeout', 'request_timeout'],
]);

/** Prefixes of provider options, accepted on nodes without a typo check. */
const OPTION_PREFIX =
  /^(?:aws|vertex|azure|openai|anthropic|google|gemini|mistral|bedrock|sagemaker|workers_ai|huggingface|stability|fireworks|snowflake|oracle|cohere|databricks|ibm|watsonx)_/;
const SNAKE_CASE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/;

// ---- The walk --------------------------------------------------------------------------------

export interface ParseConfigOptions {
  /**
   * The request names a provider or virtual key itself (x-gw-provider, x-gw-virtual-key), which
   * the root inherits: leaves then need not name one.
   */
  requestProvider?: boolean;
  /** Checks hooks' check ids and parameters too (the gateway does it once it has loaded the checks). */
  findCheck?: FindCheck;
}

interface Walk {
  problems: FieldProblem[];
  findCheck: FindCheck | undefined;
  /** Targets counted so far, all levels. */
  targets: number;
  /** MAX_TARGETS was exceeded (reported once). */
  overflow: boolean;
}

function join(path: string, rest: string): string {
  if (path === '') return rest;
  if (rest === '') return path;
  return rest.startsWith('[') ? path + rest : `${path}.${rest}`;
}

/** A provider option given as a document (`vertex_service_account_json`): its text may span lines. */
const DOCUMENT_OPTION = /_json$/;

function checkKeys(obj: Record<string, unknown>, known: readonly string[], path: string, w: Walk, node = false): void {
  for (const key of Object.keys(obj)) {
    if (known.includes(key)) continue;
    // Provider options become headers, URL parts or signed values: one line of Latin-1 each.
    const value = obj[key];
    if (node && typeof value === 'string' && !DOCUMENT_OPTION.test(key) && !isSendable(value)) {
      w.problems.push({ path: join(path, key), message: UNSENDABLE_MESSAGE });
    }
    if (node && OPTION_PREFIX.test(key)) continue;
    const hint = (node ? NODE_HINTS.get(key) : undefined) ?? suggestion(key, known);
    if (hint !== undefined) w.problems.push({ path: join(path, key), message: `unknown key; did you mean "${hint}"?` });
    else if (!node || !SNAKE_CASE.test(key)) w.problems.push({ path: join(path, key), message: 'unknown key' });
  }
}

/** Whether a JSON value nests deeper than `limit`; recursion stops at the limit. */
function tooDeep(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (limit === 0) return true;
  for (const item of Array.isArray(value) ? value : Object.values(value)) if (tooDeep(item, limit - 1)) return true;
  return false;
}

function checkValue(value: unknown, path: string, w: Walk): void {
  if (tooDeep(value, MAX_VALUE_DEPTH)) w.problems.push({ path, message: `must not nest deeper than ${MAX_VALUE_DEPTH} levels` });
}

function checkFieldPath(key: string): string | undefined {
  const segments = key.split('.');
  if (segments.some((s) => s === '')) return 'is not a valid field path';
  if (!QUERY_ROOTS.has(segments[0] as string)) return 'must start with metadata., params. or url.';
  if (segments[0] === 'url' && key !== 'url.pathname') return 'must be url.pathname';
  return undefined;
}

function checkOperator(op: string, operand: unknown, path: string, w: Walk): void {
  const problem = (message: string): void => void w.problems.push({ path, message });
  switch (op) {
    case '$eq':
    case '$ne':
      checkValue(operand, path, w);
      return;
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      if (typeof operand !== 'number' && typeof operand !== 'string') problem('must be a number or a string');
      return;
    case '$in':
    case '$nin':
      if (!Array.isArray(operand)) problem('must be an array');
      else checkValue(operand, path, w);
      return;
    case '$regex':
      if (typeof operand !== 'string') problem('must be a string');
      else if (operand.length > MAX_REGEX_LENGTH) problem(`must be at most ${MAX_REGEX_LENGTH} characters`);
      else {
        try {
          new RegExp(operand);
        } catch {
          problem('is not a valid regular expression');
        }
      }
      return;
    default:
      if (!op.startsWith('$')) problem('cannot be mixed with operators');
      else if (LOGICAL_OPERATORS.includes(op)) problem('is only allowed at the top of a query');
      else problem(`unknown operator; expected one of ${FIELD_OPERATORS.join(', ')}`);
  }
}

function checkQuery(query: Record<string, unknown>, path: string, depth: number, w: Walk): void {
  if (depth > MAX_QUERY_DEPTH) {
    w.problems.push({ path, message: `must not nest deeper than ${MAX_QUERY_DEPTH} levels` });
    return;
  }
  for (const [key, value] of Object.entries(query)) {
    const at = `${path}.${key}`;
    if (LOGICAL_OPERATORS.includes(key)) {
      if (!Array.isArray(value)) w.problems.push({ path: at, message: 'must be an array of queries' });
      else if (value.length === 0) w.problems.push({ path: at, message: 'must have at least 1 item' });
      else {
        value.forEach((sub, i) => {
          if (isRecord(sub)) checkQuery(sub, `${at}[${i}]`, depth + 1, w);
          else w.problems.push({ path: `${at}[${i}]`, message: 'must be an object' });
        });
      }
    } else if (key.startsWith('$')) {
      w.problems.push({
        path: at,
        message: FIELD_OPERATORS.includes(key)
          ? 'must be applied to a field, e.g. {"params.model": {"$eq": "gpt-4o"}}'
          : 'unknown operator; expected $and, $or or a field path',
      });
    } else {
      const pathProblem = checkFieldPath(key);
      if (pathProblem) w.problems.push({ path: at, message: pathProblem });
      if (isOperatorObject(value)) {
        for (const [op, operand] of Object.entries(value)) checkOperator(op, operand, `${at}.${op}`, w);
      } else {
        checkValue(value, at, w);
      }
    }
  }
}

function checkStrategy(strategy: Record<string, unknown>, targets: readonly unknown[] | undefined, path: string, w: Walk): void {
  const mode = MODES.find((m) => m === strategy.mode);
  if (mode === undefined) return; // reported by the schema; nothing else can be judged without it
  const problem = (key: string, message: string): void => void w.problems.push({ path: `${path}.${key}`, message });

  if (mode !== 'fallback' && strategy.on_status_codes !== undefined) problem('on_status_codes', 'is only allowed with mode fallback');
  if (mode !== 'conditional') {
    if (strategy.conditions !== undefined) problem('conditions', 'is only allowed with mode conditional');
    if (strategy.default !== undefined) problem('default', 'is only allowed with mode conditional');
    return;
  }
  if (strategy.conditions === undefined) problem('conditions', 'is required with mode conditional');

  // `then` and `default` name one of this node's own targets.
  let names: Set<string> | undefined;
  if (targets) {
    names = new Set();
    for (const t of targets) if (isRecord(t) && typeof t.name === 'string') names.add(t.name);
  }
  const unknownName = (name: unknown): name is string => names !== undefined && typeof name === 'string' && name !== '' && !names.has(name);

  if (Array.isArray(strategy.conditions)) {
    strategy.conditions.forEach((condition: unknown, i) => {
      if (!isRecord(condition)) return;
      const at = `${path}.conditions[${i}]`;
      checkKeys(condition, CONDITION_KEYS, at, w);
      if (isRecord(condition.query)) checkQuery(condition.query, `${at}.query`, 0, w);
      if (unknownName(condition.then)) w.problems.push({ path: `${at}.then`, message: `no target named "${condition.then}"` });
    });
  }
  if (unknownName(strategy.default)) problem('default', `no target named "${strategy.default}"`);
}

function checkSubObjects(node: Record<string, unknown>, path: string, w: Walk): void {
  if (isRecord(node.strategy)) checkKeys(node.strategy, STRATEGY_KEYS, join(path, 'strategy'), w);
  if (isRecord(node.retry)) checkKeys(node.retry, RETRY_KEYS, join(path, 'retry'), w);
  if (isRecord(node.cache)) {
    checkKeys(node.cache, CACHE_KEYS, join(path, 'cache'), w);
    if (isRecord(node.cache.embedding)) checkKeys(node.cache.embedding, EMBEDDING_KEYS, join(path, 'cache.embedding'), w);
  }
}

/** `routed`: a parent (or the request) names a provider or virtual key this node inherits. */
function checkNode(node: unknown, path: string, depth: number, routed: boolean, w: Walk): void {
  if (!isRecord(node)) {
    w.problems.push(path === '' ? { path, message: 'config must be a JSON object' } : { path, message: 'must be an object' });
    return;
  }
  const parsed = nodeSchema.safeParse(node, PARSE_CONTEXT);
  if (!parsed.success) {
    for (const p of problemsFromZod(parsed.error.issues, node)) w.problems.push({ path: join(path, p.path), message: p.message });
  }
  checkKeys(node, NODE_KEYS, path, w, true);
  checkSubObjects(node, path, w);
  for (const key of HOOK_KEYS) {
    const list = node[key];
    if (Array.isArray(list)) w.problems.push(...hookProblems(key, list, path, w.findCheck));
  }

  const targetsPath = join(path, 'targets');
  const targets = Array.isArray(node.targets) ? (node.targets as unknown[]) : undefined;
  if (node.strategy !== undefined && node.targets === undefined) w.problems.push({ path: targetsPath, message: 'is required when strategy is set' });
  if (node.targets !== undefined && node.strategy === undefined) w.problems.push({ path: join(path, 'strategy'), message: 'is required when targets is set' });
  if (isRecord(node.strategy)) checkStrategy(node.strategy, targets, join(path, 'strategy'), w);

  // Mirrors inherit.ts: a node naming a provider or virtual key (valid or not: a bad one is
  // reported already) routes itself; otherwise it routes wherever its parent does.
  const routesHere = routed || node.provider !== undefined || node.virtual_key !== undefined;
  if (node.targets === undefined) {
    if (!routesHere && node.strategy === undefined) {
      w.problems.push(path === '' ? { path, message: 'config names no provider or virtual_key' } : { path, message: 'names no provider or virtual_key' });
    }
    return;
  }
  if (!targets) return;

  // Bound the work before doing any of it.
  if (depth >= MAX_DEPTH) {
    w.problems.push({ path: targetsPath, message: `must not nest deeper than ${MAX_DEPTH} levels` });
    return;
  }
  if (w.overflow) return;
  if (w.targets + targets.length > MAX_TARGETS) {
    w.overflow = true;
    w.problems.push({ path: targetsPath, message: `exceeds the limit of ${MAX_TARGETS} targets in one config` });
    return;
  }
  w.targets += targets.length;

  const seen = new Set<string>();
  targets.forEach((t, i) => {
    if (!isRecord(t) || typeof t.name !== 'string') return;
    if (seen.has(t.name)) w.problems.push({ path: `${targetsPath}[${i}].name`, message: `duplicate name "${t.name}" among sibling targets` });
    seen.add(t.name);
  });
  const strategy = isRecord(node.strategy) ? node.strategy : undefined;
  if (strategy?.mode === 'loadbalance' && targets.length > 0 && targets.every((t) => isRecord(t) && t.weight === 0)) {
    w.problems.push({ path: targetsPath, message: 'all weights are 0' });
  }

  targets.forEach((t, i) => checkNode(t, `${targetsPath}[${i}]`, depth + 1, routesHere, w));
}

/** Every problem in a config, in walk order; empty when it is valid. */
export function configProblems(raw: unknown, options: ParseConfigOptions = {}): FieldProblem[] {
  const w: Walk = { problems: [], findCheck: options.findCheck, targets: 0, overflow: false };
  checkNode(raw, '', 0, options.requestProvider === true, w);
  return w.problems;
}

/** Validates a config object, throwing a ValidationError that lists every problem. */
export function parseConfig(raw: unknown, options: ParseConfigOptions = {}): ConfigNode {
  const problems = configProblems(raw, options);
  if (problems.length > 0) throw new ValidationError(problems);
  return raw as ConfigNode;
}

/** Parses and validates an inline `x-gw-config` header. */
export function parseConfigHeader(raw: string, options: ParseConfigOptions = {}): ConfigNode {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new ValidationError([{ path: CONFIG_HEADER, message: 'is not valid JSON' }], { cause: err });
  }
  return parseConfig(parsed, options);
}
