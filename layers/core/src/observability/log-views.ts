/**
 * Logs as the API shows them: list rows (every field but the bodies), one log in full (with the
 * reference API's `request`, `response` and `metrics` objects), and export lines with the
 * reference's `requested_data` column names. Costs are US cents (and exact micro-dollars).
 */
import type { LogEvent } from './log-event.ts';
import { cents } from './analytics-views.ts';

export const EXPORT_COLUMNS = [
  'id',
  'trace_id',
  'created_at',
  'request',
  'response',
  'is_success',
  'ai_org',
  'ai_model',
  'req_units',
  'res_units',
  'total_units',
  'request_url',
  'cost',
  'cost_currency',
  'response_time',
  'response_status_code',
  'mode',
  'config',
  'prompt_slug',
  'metadata',
] as const;
export type ExportColumn = (typeof EXPORT_COLUMNS)[number];

/** Columns that need the bodies read (from blob storage when large). */
export const BODY_COLUMNS: ReadonlySet<ExportColumn> = new Set(['request', 'response']);

/** How the request was routed: a config that fell back, a config, or a single target from headers. */
export const modeOf = (e: LogEvent): string => (e.fallback ? 'fallback' : e.config_source && e.config_source !== 'headers' ? 'config' : 'single');

type Row = Record<string, unknown>;

export function logRow(e: LogEvent): Row {
  const { request_body: _req, response_body: _res, v: _v, ...rest } = e;
  return { object: 'log', ...rest, cost: cents(e.cost_micros), cost_currency: 'USD' };
}

export function logView(e: LogEvent): Row {
  return {
    ...logRow(e),
    _id: e.id,
    request_body: e.request_body ?? null,
    response_body: e.response_body ?? null,
    request: { url: e.path, method: e.method, body: e.request_body ?? null },
    response: { status: e.status_code, body: e.response_body ?? null, responseTime: e.total_ms, lastUsedOptionJsonPath: e.last_used_option_index },
    metrics: {
      id: e.id,
      organisation_id: e.organisation_id,
      config_id: e.config_id,
      created_at: e.created_at,
      is_success: e.is_success,
      ai_org: e.ai_service ?? e.provider,
      ai_model: e.model,
      req_units: e.prompt_tokens,
      res_units: e.completion_tokens,
      total_units: e.total_tokens,
      cost: cents(e.cost_micros),
      cost_currency: 'USD',
      request_url: e.path,
      request_method: e.method,
      response_status_code: e.status_code,
      response_time: e.total_ms,
      cache_status: e.cache_status,
      stream_mode: e.stream ? 1 : 0,
      retry_success_count: e.is_success ? Math.max(e.retries, 0) : 0,
      trace_id: e.trace_id,
      span_id: e.span_id,
      span_name: e.span_name,
      parent_span_id: e.parent_span_id,
      mode: modeOf(e),
      virtual_key: e.provider?.startsWith('@') ? e.provider.slice(1) : null,
      config: e.config_id,
      prompt_slug: e.prompt_slug,
    },
  };
}

export function exportLine(e: LogEvent, columns: readonly ExportColumn[]): Row {
  const row: Row = {};
  for (const c of columns) {
    switch (c) {
      case 'request':
        row.request = { url: e.path, method: e.method, body: e.request_body ?? null };
        break;
      case 'response':
        row.response = { status: e.status_code, body: e.response_body ?? null, response_time: e.total_ms };
        break;
      case 'ai_org':
        row.ai_org = e.ai_service ?? e.provider;
        break;
      case 'ai_model':
        row.ai_model = e.model;
        break;
      case 'req_units':
        row.req_units = e.prompt_tokens;
        break;
      case 'res_units':
        row.res_units = e.completion_tokens;
        break;
      case 'total_units':
        row.total_units = e.total_tokens;
        break;
      case 'request_url':
        row.request_url = e.path;
        break;
      case 'cost':
        row.cost = cents(e.cost_micros);
        break;
      case 'cost_currency':
        row.cost_currency = 'USD';
        break;
      case 'response_time':
        row.response_time = e.total_ms;
        break;
      case 'response_status_code':
        row.response_status_code = e.status_code;
        break;
      case 'mode':
        row.mode = modeOf(e);
        break;
      case 'config':
        row.config = e.config_id;
        break;
      default:
        row[c] = e[c];
    }
  }
  return row;
}
