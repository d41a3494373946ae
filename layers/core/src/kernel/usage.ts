/**
 * The usage sink: the one place that writes a request's token usage, answering model and cost into
 * its record. Every source of usage (a JSON answer, an SSE stream, a native provider's report, an
 * Anthropic-shaped answer) calls `noteUsage`; every price is set by `priceRecord`, which prices a
 * request once (a later caller keeps the first figure).
 */
import type { GatewayRecord, TokenUsage } from './lifecycle.ts';

/** Usage in OpenAI's shape, as answers and native providers report it. */
export interface OpenAIUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
  /** The Responses API's names for the same counts. */
  input_tokens?: number;
  output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number };
  output_tokens_details?: { reasoning_tokens?: number };
}

export function toUsage(u: OpenAIUsage | undefined | null): TokenUsage | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const prompt = Number(u.prompt_tokens ?? u.input_tokens ?? 0);
  const completion = Number(u.completion_tokens ?? u.output_tokens ?? 0);
  const usage: TokenUsage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: Number(u.total_tokens ?? prompt + completion),
  };
  const cached = u.prompt_tokens_details?.cached_tokens ?? u.input_tokens_details?.cached_tokens;
  const reasoning = u.completion_tokens_details?.reasoning_tokens ?? u.output_tokens_details?.reasoning_tokens;
  if (typeof cached === 'number') usage.cached_tokens = cached;
  if (typeof reasoning === 'number') usage.reasoning_tokens = reasoning;
  return usage;
}

/** Records what an answer reported: its usage (when it has one) and the model that answered. */
export function noteUsage(record: GatewayRecord, usage: TokenUsage | undefined, model?: unknown): void {
  if (usage) record.usage = usage;
  if (typeof model === 'string' && model) record.model = model;
}

/**
 * `noteUsage` for an OpenAI-shaped answer (`{usage, model}`), or a Responses stream event that
 * carries the response (`{type: "response.completed", response: {usage, model}}`); anything else
 * is ignored.
 */
export function noteOpenAIUsage(record: GatewayRecord, value: unknown): void {
  if (value === null || typeof value !== 'object') return;
  let answer = value as { usage?: OpenAIUsage; model?: unknown; response?: unknown };
  if (answer.usage === undefined && answer.response !== null && typeof answer.response === 'object') answer = answer.response as typeof answer;
  noteUsage(record, toUsage(answer.usage), answer.model);
}

/**
 * The model a target is about to be sent: the client's, or the one a target's `override_params`
 * (or a managed `@slug/model`) put in its place. It stands until the answer names its own, and is
 * what gets priced when the answer's model has no price.
 */
export function noteSentModel(record: GatewayRecord, model: unknown): void {
  if (typeof model !== 'string' || !model) return;
  record.model = record.sentModel = model;
}

/** Prices a request from its record. */
export interface Pricer {
  costMicros(record: GatewayRecord): number | undefined;
}

/**
 * The request's cost in micro-dollars, set once: a request already priced keeps its figure. An
 * answer with usage whose model has no price costs nothing and is flagged (`unpriced`, the log's
 * `cost_unpriced`), so a missing price shows instead of passing for a free request.
 */
export function priceRecord(record: GatewayRecord, pricer: Pricer): number | undefined {
  if (record.costMicros !== undefined) return record.costMicros;
  const micros = pricer.costMicros(record);
  if (micros !== undefined) {
    record.costMicros = micros;
    delete record.unpriced;
  } else if (record.usage && record.provider) {
    record.unpriced = true;
  }
  return micros;
}
