/**
 * Filters on request logs, shared by the logs list, analytics and exports. They take the reference
 * API's names (`time_of_generation_min`, `status_code`, `ai_org_model`, `api_key_ids`, `configs`,
 * `trace_id`, `metadata`, ...) from a query string or a JSON body, and match events in memory.
 * Rollups can answer a filter on one dimension; anything finer needs the logs themselves.
 */
import { ValidationError, type FieldProblem } from '../http/errors.ts';
import type { Dimension } from './aggregate.ts';
import type { LogEvent } from './log-event.ts';
import { DAY_MS } from './time.ts';

export interface Range {
  min?: number;
  max?: number;
}

export interface LogFilters {
  /** Inclusive, milliseconds. */
  from: number;
  to: number;
  statusCodes?: number[];
  models?: string[];
  providers?: string[];
  aiServices?: string[];
  aiOrgModels?: { provider: string; model: string }[];
  apiKeyIds?: string[];
  configs?: string[];
  traceIds?: string[];
  spanIds?: string[];
  promptSlugs?: string[];
  metadata?: Record<string, string>;
  /** Only requests made with keys of these users (callers who may not see all data). */
  keyUserIds?: string[];
  totalUnits?: Range;
  /** US cents. */
  costCents?: Range;
  promptTokens?: Range;
  completionTokens?: Range;
}

/** Every filter name accepted, for documentation and for refusing unknown names in bodies. */
export const FILTER_NAMES = [
  'time_of_generation_min',
  'time_of_generation_max',
  'status_code',
  'ai_model',
  'model',
  'provider',
  'virtual_keys',
  'ai_service',
  'ai_org_model',
  'api_key_ids',
  'api_key_id',
  'configs',
  'config',
  'trace_id',
  'span_id',
  'prompt_slug',
  'metadata',
  'total_units_min',
  'total_units_max',
  'cost_min',
  'cost_max',
  'prompt_token_min',
  'prompt_token_max',
  'completion_token_min',
  'completion_token_max',
] as const;

export interface ParseFilterOptions {
  now: number;
  /** Days back the range may reach; an earlier start is moved up to it (clipped, not refused). */
  retentionDays: number;
  /** The range when no start is given: this many ms before the end (default: the retention). */
  defaultSpanMs?: number;
}

type Source = Record<string, unknown>;

const list = (v: unknown): string[] | undefined => {
  if (v === undefined || v === null || v === '') return undefined;
  const items = (Array.isArray(v) ? v.map(String) : String(v).split(',')).map((s) => s.trim()).filter(Boolean);
  return items.length ? items : undefined;
};

/** Reads typed values out of a query or body, collecting every problem with its field. */
class FieldReader {
  readonly problems: FieldProblem[] = [];
  readonly src: Source;

  constructor(src: Source) {
    this.src = src;
  }

  time(name: string): number | undefined {
    const v = this.src[name];
    if (v === undefined || v === null || v === '') return undefined;
    const ms = typeof v === 'number' ? v : Date.parse(String(v));
    if (Number.isFinite(ms)) return ms;
    this.problems.push({ path: name, message: 'must be an ISO 8601 date-time' });
    return undefined;
  }

  num(name: string, integer: boolean): number | undefined {
    const v = this.src[name];
    if (v === undefined || v === null || v === '') return undefined;
    const n = Number(v);
    if (Number.isFinite(n) && n >= 0 && (!integer || Number.isInteger(n))) return n;
    this.problems.push({ path: name, message: integer ? 'must be a non-negative integer' : 'must be a non-negative number' });
    return undefined;
  }

  range(prefix: string, integer: boolean): Range | undefined {
    const min = this.num(`${prefix}_min`, integer);
    const max = this.num(`${prefix}_max`, integer);
    if (min === undefined && max === undefined) return undefined;
    if (min !== undefined && max !== undefined && min > max) this.problems.push({ path: `${prefix}_min`, message: `must not exceed ${prefix}_max` });
    return { ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) };
  }

  /** Values of one or two list fields together (`ai_model` and `model` ...). */
  lists(...names: string[]): string[] | undefined {
    const all = names.flatMap((n) => list(this.src[n]) ?? []);
    return all.length ? all : undefined;
  }
}

/** The time range, clipped to the retention; the default span when no start is given. */
function timeWindow(r: FieldReader, opts: ParseFilterOptions): LogFilters {
  const maxMs = r.time('time_of_generation_max') ?? opts.now;
  const requestedMin = r.time('time_of_generation_min');
  const floor = opts.now - opts.retentionDays * DAY_MS;
  const minMs = Math.max(requestedMin ?? maxMs - (opts.defaultSpanMs ?? opts.retentionDays * DAY_MS), floor);
  if (requestedMin !== undefined && requestedMin > maxMs) {
    r.problems.push({ path: 'time_of_generation_min', message: 'must not be after time_of_generation_max' });
  }
  return { from: minMs, to: maxMs };
}

/** Status codes and `provider__model` pairs: lists with a format of their own. */
function codedLists(r: FieldReader, f: LogFilters): void {
  const statuses = list(r.src.status_code);
  if (statuses) {
    const codes = statuses.map(Number);
    if (codes.some((c) => !Number.isInteger(c) || c < 100 || c > 599))
      r.problems.push({ path: 'status_code', message: 'must be comma-separated HTTP status codes' });
    else f.statusCodes = codes;
  }
  const pairs = list(r.src.ai_org_model);
  if (pairs) {
    const parsed = pairs.map((p) => {
      const i = p.indexOf('__');
      return i > 0 && i < p.length - 2 ? { provider: p.slice(0, i), model: p.slice(i + 2) } : undefined;
    });
    if (parsed.some((p) => p === undefined)) r.problems.push({ path: 'ai_org_model', message: 'must be comma-separated provider__model pairs' });
    else f.aiOrgModels = parsed as { provider: string; model: string }[];
  }
}

/** Plain lists of ids and names. */
function nameLists(r: FieldReader, f: LogFilters): void {
  const set = <K extends keyof LogFilters>(key: K, value: LogFilters[K] | undefined) => {
    if (value !== undefined) f[key] = value;
  };
  set('models', r.lists('ai_model', 'model'));
  const providers = [...(list(r.src.provider) ?? []), ...(list(r.src.virtual_keys) ?? []).map((v) => (v.startsWith('@') ? v : `@${v}`))];
  set('providers', providers.length ? providers : undefined);
  set('aiServices', r.lists('ai_service'));
  set('apiKeyIds', r.lists('api_key_ids', 'api_key_id'));
  set('configs', r.lists('configs', 'config'));
  set('traceIds', r.lists('trace_id'));
  set('spanIds', r.lists('span_id'));
  set('promptSlugs', r.lists('prompt_slug'));
}

/** `metadata` as a JSON object, and `metadata.<key>` fields. */
function metadataFilter(r: FieldReader): Record<string, string> | undefined {
  const meta: Record<string, string> = {};
  const rawMeta = r.src.metadata;
  if (rawMeta !== undefined && rawMeta !== '') {
    let obj: unknown = rawMeta;
    if (typeof rawMeta === 'string') {
      try {
        obj = JSON.parse(rawMeta);
      } catch {
        obj = undefined;
      }
    }
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj))
      r.problems.push({ path: 'metadata', message: 'must be a JSON object of key-value pairs' });
    else for (const [k, v] of Object.entries(obj as Record<string, unknown>)) meta[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  for (const [name, v] of Object.entries(r.src)) {
    if (name.startsWith('metadata.') && name.length > 9) meta[name.slice(9)] = String(v);
  }
  return Object.keys(meta).length ? meta : undefined;
}

/** Parses filters from a query string (strings) or a body (typed); names every bad field. */
export function parseFilters(src: Source, opts: ParseFilterOptions): LogFilters {
  const r = new FieldReader(src);
  for (const name of ['weighted_feedback_min', 'weighted_feedback_max']) {
    if (src[name] !== undefined) r.problems.push({ path: name, message: 'feedback is not part of request logs; this filter is not supported' });
  }
  const f = timeWindow(r, opts);
  codedLists(r, f);
  nameLists(r, f);
  const meta = metadataFilter(r);
  if (meta) f.metadata = meta;
  const ranges = [
    ['totalUnits', r.range('total_units', true)],
    ['costCents', r.range('cost', false)],
    ['promptTokens', r.range('prompt_token', true)],
    ['completionTokens', r.range('completion_token', true)],
  ] as const;
  for (const [key, range] of ranges) if (range) f[key] = range;
  if (r.problems.length) throw new ValidationError(r.problems);
  return f;
}

const inRange = (v: number, r: Range | undefined) => !r || ((r.min === undefined || v >= r.min) && (r.max === undefined || v <= r.max));
const oneOf = <T>(v: T, set: readonly T[] | undefined) => !set || set.includes(v);

export const metadataText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/** Whether an event passes every filter (the time range included). */
export function matches(e: LogEvent, f: LogFilters): boolean {
  if (e.started_ms < f.from || e.started_ms > f.to) return false;
  if (!oneOf(e.status_code, f.statusCodes)) return false;
  if (f.models && !f.models.includes(e.model ?? '')) return false;
  if (f.providers && !f.providers.includes(e.provider ?? '')) return false;
  if (f.aiServices && !f.aiServices.includes(e.ai_service ?? '')) return false;
  if (f.aiOrgModels && !f.aiOrgModels.some((p) => (p.provider === e.provider || p.provider === e.ai_service) && p.model === e.model)) return false;
  if (f.apiKeyIds && !f.apiKeyIds.includes(e.api_key_id ?? '')) return false;
  if (f.configs && !f.configs.includes(e.config_id ?? '')) return false;
  if (f.traceIds && !f.traceIds.includes(e.trace_id)) return false;
  if (f.spanIds && !f.spanIds.includes(e.span_id ?? '')) return false;
  if (f.promptSlugs && !f.promptSlugs.includes(e.prompt_slug ?? '')) return false;
  if (f.keyUserIds && !f.keyUserIds.includes(e.key_user_id ?? '')) return false;
  if (f.metadata) {
    for (const [k, v] of Object.entries(f.metadata)) {
      const actual = e.metadata?.[k];
      if (actual === undefined || metadataText(actual) !== v) return false;
    }
  }
  if (!inRange(e.total_tokens, f.totalUnits)) return false;
  if (!inRange(e.cost_micros / 10_000, f.costCents)) return false;
  if (!inRange(e.prompt_tokens, f.promptTokens)) return false;
  if (!inRange(e.completion_tokens, f.completionTokens)) return false;
  return true;
}

/** A FilterExpression that keeps at least every log item `matches` would keep (see `prefilterOf`). */
export interface Prefilter {
  expression: string;
  names: Record<string, string>;
  values: Record<string, string>;
}

/** The event fields a list filters by equality, and the filter values of each. */
const EQUALITY_FIELDS: ReadonlyArray<[keyof LogEvent, (f: LogFilters) => readonly (string | number)[] | undefined]> = [
  ['status_code', (f) => f.statusCodes],
  ['model', (f) => f.models],
  ['provider', (f) => f.providers],
  ['ai_service', (f) => f.aiServices],
  ['api_key_id', (f) => f.apiKeyIds],
  ['config_id', (f) => f.configs],
  ['trace_id', (f) => f.traceIds],
  ['span_id', (f) => f.spanIds],
  ['prompt_slug', (f) => f.promptSlugs],
  ['key_user_id', (f) => f.keyUserIds],
];

/**
 * The equality filters as a FilterExpression on the log item's event text (`e`, the event's JSON):
 * `contains(e, '"trace_id":"t-7"')`, any of a field's values, every field filtered. DynamoDB still
 * reads every item (the read budget counts them), but returns only those that may match, so a rare
 * filter no longer moves thousands of events to be parsed and dropped. A superset: `matches` decides
 * on what comes back. Items without the event text (written by earlier versions) always come back.
 * Undefined when no filter can be put so (none given, or one asks for a missing value: '').
 */
export function prefilterOf(f: LogFilters): Prefilter | undefined {
  const clauses: string[] = [];
  const values: Record<string, string> = {};
  for (const [field, valuesOf] of EQUALITY_FIELDS) {
    const wanted = valuesOf(f);
    if (!wanted || wanted.length === 0 || wanted.includes('')) continue;
    const any = wanted.map((v) => {
      const name = `:pf${Object.keys(values).length}`;
      values[name] = `${JSON.stringify(field)}:${JSON.stringify(v)}`;
      return `contains(#e, ${name})`;
    });
    clauses.push(any.length === 1 ? any[0]! : `(${any.join(' OR ')})`);
  }
  if (clauses.length === 0) return undefined;
  // DynamoDB refuses redundant parentheses: a lone group of values is already in its own.
  const all = clauses.length === 1 && clauses[0]!.startsWith('(') ? clauses[0]! : `(${clauses.join(' AND ')})`;
  return { expression: `attribute_not_exists(#e) OR ${all}`, names: { '#e': 'e' }, values };
}

/** How rollups can answer: one dimension, optionally restricted to some values. */
export interface RollupPlan {
  dim: Dimension;
  values?: ReadonlySet<string>;
}

/**
 * The rollups that answer these filters (grouped by `groupDim` when given), or undefined when only
 * the logs can: a filter below the dimension level, or filters on two dimensions at once.
 */
export function rollupPlan(f: LogFilters, groupDim?: Dimension): RollupPlan | undefined {
  if (f.aiOrgModels || f.traceIds || f.spanIds || f.metadata || f.keyUserIds || f.totalUnits || f.costCents || f.promptTokens || f.completionTokens)
    return undefined;
  const dims: [Dimension, readonly string[] | undefined][] = [
    ['status_code', f.statusCodes?.map(String)],
    ['model', f.models],
    ['provider', f.providers],
    ['ai_service', f.aiServices],
    ['api_key', f.apiKeyIds],
    ['config', f.configs],
    ['prompt', f.promptSlugs],
  ];
  const used = dims.filter(([, v]) => v !== undefined);
  if (used.length === 0) return { dim: groupDim ?? 'all' };
  if (used.length > 1) return undefined;
  const [dim, values] = used[0] as [Dimension, readonly string[]];
  if (groupDim && groupDim !== dim) return undefined;
  return { dim, values: new Set(values) };
}
