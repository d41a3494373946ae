/** Answers of feedback, request logs, log exports and analytics. */
import * as z from 'zod';
import type * as Exports from '../../admin/log-exports/service.ts';
import type { FeedbackAnswer } from '../../admin/feedback/service.ts';
import type * as FeedbackReads from '../../admin/feedback/reads.ts';
import type * as Views from '../../observability/analytics-views.ts';
import type { LogEvent } from '../../observability/log-event.ts';
import { answerOf, isoTime, nullableString, openAnswerOf } from './common.ts';

type Returns<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;

const record = z.record(z.string(), z.unknown());

export const feedbackAnswer = answerOf<FeedbackAnswer>()(z.object({ status: z.literal('success'), message: z.string(), feedback_ids: z.array(z.string()) }));

export const feedbackView = answerOf<ReturnType<typeof FeedbackReads.feedbackView>>()(
  z.object({
    object: z.literal('feedback'),
    id: z.string(),
    organisation_id: z.string(),
    workspace_id: z.string(),
    trace_id: z.string(),
    value: z.number(),
    weight: z.number(),
    metadata: record.nullable(),
    created_at: isoTime,
    last_updated_at: isoTime,
    created_by: z.string(),
    last_updated_by: z.string(),
  }),
);

const exportShape = {
  object: z.literal('export'),
  id: z.string(),
  organisation_id: z.string(),
  workspace_id: z.string(),
  filters: record,
  requested_data: z.array(z.string()),
  status: z.enum(['draft', 'in_progress', 'success', 'failed', 'stopped']),
  description: z.string(),
  created_at: isoTime,
  last_updated_at: isoTime,
  created_by: nullableString,
  last_updated_by: nullableString,
  progress: z.object({ exported: z.number().int(), total: z.number().int(), parts: z.number().int() }),
  started_at: nullableString,
  finished_at: nullableString,
  error: nullableString,
};

export const exportView = answerOf<ReturnType<typeof Exports.exportView>>()(z.object(exportShape));

export const exportWritten = answerOf<Returns<typeof Exports.createExport>>()(
  z.object({ id: z.string(), total: z.number().int().describe('The logs the export will hold, as counted now'), object: z.literal('export') }),
);

export const exportMessage = answerOf<Returns<typeof Exports.startExport>>()(z.object({ message: z.string(), object: z.literal('export') }));

export const exportDownload = answerOf<Returns<typeof Exports.downloadExport>>()(
  z.object({ signed_url: z.string().describe('A link to the export file, valid for a while') }),
);

/** A log row: the event (observability/log-event.ts) without its bodies, costs in US cents. */
type LogRow = Omit<LogEvent, 'request_body' | 'response_body' | 'v'> & { object: 'log'; cost: number; cost_currency: string };

const logRowShape = {
  object: z.literal('log'),
  id: z.string(),
  source: z.string(),
  organisation_id: nullableString,
  workspace_id: nullableString,
  created_at: isoTime,
  started_ms: z.number(),
  trace_id: z.string(),
  span_id: nullableString,
  parent_span_id: nullableString,
  span_name: nullableString,
  api_key_id: nullableString,
  key_user_id: nullableString,
  config_id: nullableString,
  config_source: nullableString,
  provider: nullableString,
  ai_service: nullableString,
  model: nullableString,
  endpoint: z.string(),
  method: z.string(),
  path: z.string(),
  stream: z.boolean(),
  status_code: z.number().int(),
  is_success: z.boolean(),
  error_code: nullableString,
  error_message: nullableString,
  total_ms: z.number(),
  upstream_ms: z.number().nullable(),
  ttft_ms: z.number().nullable(),
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  total_tokens: z.number(),
  cached_tokens: z.number(),
  reasoning_tokens: z.number(),
  cost_micros: z.number(),
  cost: z.number().describe('US cents'),
  cost_currency: z.string(),
  cache_savings_micros: z.number(),
  cache_status: nullableString,
  retries: z.number().int(),
  last_used_option_index: nullableString,
  fallback: z.boolean(),
  cancelled: z.boolean(),
  metadata: record,
  user: nullableString,
  prompt_slug: nullableString,
  organisation: nullableString,
  environment: nullableString,
  request_bytes: z.number().nullable(),
  response_bytes: z.number().nullable(),
};

/**
 * Rows carry every field of the event; those named here always, others (a prompt's version, an
 * MCP call's names, guardrail verdicts) where they apply. The schema is open, as the event grows.
 */
export const logRow = openAnswerOf<LogRow>()(z.looseObject(logRowShape));

export const logView = logRow.extend({
  _id: z.string(),
  request_body: z.unknown(),
  response_body: z.unknown(),
  request: z.object({ url: z.string(), method: z.string(), body: z.unknown() }),
  response: z.object({ status: z.number().int(), body: z.unknown(), responseTime: z.number(), lastUsedOptionJsonPath: nullableString }),
  metrics: record.describe("The reference API's metrics object"),
  feedback: z.array(feedbackView),
});

export const logList = z.object({
  object: z.literal('list'),
  total: z.number().int().nullable().describe('null when counting would read too much (a cursor page, or filters the rollups cannot count)'),
  data: z.array(logRow),
  has_more: z.boolean(),
  next_cursor: nullableString,
  partial: z
    .boolean()
    .describe(
      'true when the read budget of a page (docs/observability.md#logs-api) ended it before it held page_size rows: it holds every match down to scanned_until, and next_cursor searches on below it',
    ),
  scanned_until: nullableString.describe('When partial: the time (ISO 8601) the page searched down to; else null'),
});

export const logsInserted = z.object({ object: z.literal('log'), ids: z.array(z.string()) });

export const groupRow = openAnswerOf<Views.GroupRow>()(
  z
    .looseObject({
      object: z.literal('analytics-group'),
      requests: z.number().int(),
      other: z
        .literal(true)
        .optional()
        .describe('Present on the one row that sums the values past the busiest ones of each time bucket (the group-by field then reads "other")'),
    })
    .describe('The group (named by the group-by field) and the columns asked for'),
);

const point = z.looseObject({ timestamp: isoTime }).describe("The graph's values at this point");

export const graphBody = z.object({
  object: z.literal('analytics-graph'),
  summary: z.record(z.string(), z.unknown()).describe("The graph's values over the whole range"),
  data_points: z.array(point),
});

export const summaryBody = answerOf<ReturnType<typeof Views.summaryBody>>()(
  z.object({
    object: z.literal('analytics-summary'),
    summary: z.object({
      requests: z.number(),
      errors: z.number(),
      error_rate: z.number(),
      success_rate: z.number(),
      cost: z.number(),
      avg_cost: z.number(),
      cost_currency: z.string(),
      total_tokens: z.number(),
      input_tokens: z.number(),
      output_tokens: z.number(),
      avg_tokens: z.number(),
      avg_latency: z.number(),
      p50_latency: z.number(),
      p95_latency: z.number(),
      p99_latency: z.number(),
      cache_hits: z.number(),
      cache_hit_rate: z.number(),
      rescued_requests: z.number(),
      retry_rescued: z.number(),
      fallback_rescued: z.number(),
      unique_users: z.number(),
      first_seen: nullableString,
      last_seen: nullableString,
    }),
    time_of_generation_min: isoTime,
    time_of_generation_max: isoTime,
    source: z.enum(['logs', 'rollups']),
  }),
);

export const cacheSummaryBody = answerOf<ReturnType<typeof Views.cacheSummaryBody>>()(
  z.object({
    object: z.literal('analytics-summary'),
    summary: z.object({ hits: z.number(), avg_latency: z.number(), total_requests: z.number(), cache_speedup: z.number() }),
  }),
);
