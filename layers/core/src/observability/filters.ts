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
  const items = (Array.isArray(v) ? v.map(String) : String(v).split(','))
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length ? items : undefined;
};

/** Parses filters from a query string (strings) or a body (typed); names every bad field. */
export function parseFilters(src: Source, opts: ParseFilterOptions): LogFilters {
  const problems: FieldProblem[] = [];
  const time = (name: string): number | undefined => {
    const v = src[name];
    if (v === undefined || v === null || v === '') return undefined;
    const ms = typeof v === 'number' ? v : Date.parse(String(v));
    if (!Number.isFinite(ms)) {
      problems.push({ path: name, message: 'must be an ISO 8601 date-time' });
      return undefined;
    }
    return ms;
  };
  const num = (name: string, integer: boolean): number | undefined => {
    const v = src[name];
    if (v === undefined || v === null || v === '') return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) {
      problems.push({ path: name, message: integer ? 'must be a non-negative integer' : 'must be a non-negative number' });
      return undefined;
    }
    return n;
  };
  const range = (prefix: string, integer: boolean): Range | undefined => {
    const min = num(`${prefix}_min`, integer);
    const max = num(`${prefix}_max`, integer);
    if (min === undefined && max === undefined) return undefined;
    if (min !== undefined && max !== undefined && min > max) problems.push({ path: `${prefix}_min`, message: `must not exceed ${prefix}_max` });
    return { ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) };
  };

  for (const name of ['weighted_feedback_min', 'weighted_feedback_max']) {
    if (src[name] !== undefined) problems.push({ path: name, message: 'feedback is not part of request logs; this filter is not supported' });
  }

  const maxMs = time('time_of_generation_max') ?? opts.now;
  const requestedMin = time('time_of_generation_min');
  const floor = opts.now - opts.retentionDays * DAY_MS;
  const minMs = Math.max(requestedMin ?? maxMs - (opts.defaultSpanMs ?? opts.retentionDays * DAY_MS), floor);
  if (requestedMin !== undefined && requestedMin > maxMs) {
    problems.push({ path: 'time_of_generation_min', message: 'must not be after time_of_generation_max' });
  }

  const f: LogFilters = { from: minMs, to: maxMs };
  const statuses = list(src.status_code);
  if (statuses) {
    const codes = statuses.map(Number);
    if (codes.some((c) => !Number.isInteger(c) || c < 100 || c > 599)) problems.push({ path: 'status_code', message: 'must be comma-separated HTTP status codes' });
    else f.statusCodes = codes;
  }
  const models = [...(list(src.ai_model) ?? []), ...(list(src.model) ?? [])];
  if (models.length) f.models = models;
  const providers = [...(list(src.provider) ?? []), ...(list(src.virtual_keys) ?? []).map((v) => (v.startsWith('@') ? v : `@${v}`))];
  if (providers.length) f.providers = providers;
  const services = list(src.ai_service);
  if (services) f.aiServices = services;
  const pairs = list(src.ai_org_model);
  if (pairs) {
    const parsed = pairs.map((p) => {
      const i = p.indexOf('__');
      return i > 0 && i < p.length - 2 ? { provider: p.slice(0, i), model: p.slice(i + 2) } : undefined;
    });
    if (parsed.some((p) => p === undefined)) problems.push({ path: 'ai_org_model', message: 'must be comma-separated provider__model pairs' });
    else f.aiOrgModels = parsed as { provider: string; model: string }[];
  }
  const keys = [...(list(src.api_key_ids) ?? []), ...(list(src.api_key_id) ?? [])];
  if (keys.length) f.apiKeyIds = keys;
  const configs = [...(list(src.configs) ?? []), ...(list(src.config) ?? [])];
  if (configs.length) f.configs = configs;
  const traces = list(src.trace_id);
  if (traces) f.traceIds = traces;
  const spans = list(src.span_id);
  if (spans) f.spanIds = spans;
  const prompts = list(src.prompt_slug);
  if (prompts) f.promptSlugs = prompts;

  const meta: Record<string, string> = {};
  const rawMeta = src.metadata;
  if (rawMeta !== undefined && rawMeta !== '') {
    let obj: unknown = rawMeta;
    if (typeof rawMeta === 'string') {
      try {
        obj = JSON.parse(rawMeta);
      } catch {
        obj = undefined;
      }
    }
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) problems.push({ path: 'metadata', message: 'must be a JSON object of key-value pairs' });
    else for (const [k, v] of Object.entries(obj as Record<string, unknown>)) meta[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  for (const [name, v] of Object.entries(src)) {
    if (name.startsWith('metadata.') && name.length > 9) meta[name.slice(9)] = String(v);
  }
  if (Object.keys(meta).length) f.metadata = meta;

  const units = range('total_units', true);
  if (units) f.totalUnits = units;
  const cost = range('cost', false);
  if (cost) f.costCents = cost;
  const prompt = range('prompt_token', true);
  if (prompt) f.promptTokens = prompt;
  const completion = range('completion_token', true);
  if (completion) f.completionTokens = completion;

  if (problems.length) throw new ValidationError(problems);
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
  if (f.aiOrgModels || f.traceIds || f.spanIds || f.metadata || f.keyUserIds || f.totalUnits || f.costCents || f.promptTokens || f.completionTokens) return undefined;
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
