/**
 * What a request may consume, estimated before the provider is called so that tokens and cost can
 * be reserved. Prompt tokens are counted approximately, a token per four characters of the text the
 * request carries (messages, prompt, input), which is close for English and errs high for code;
 * the completion is the request's own maximum (`max_completion_tokens`, `max_tokens`, times `n`) or
 * DEFAULT_COMPLETION_TOKENS. The reservation is settled to the real usage afterwards.
 */
import type { EndpointType } from '../../providers/types.ts';

export const CHARS_PER_TOKEN = 4;
/** The completion reserved when the request sets no maximum. */
export const DEFAULT_COMPLETION_TOKENS = 1024;
/** Endpoints that produce no completion tokens. */
const NO_COMPLETION: ReadonlySet<EndpointType> = new Set<EndpointType>(['embed', 'moderate', 'rerank']);

function textChars(value: unknown, depth = 0): number {
  if (typeof value === 'string') return value.length;
  if (depth > 4 || value === null || typeof value !== 'object') return 0;
  if (Array.isArray(value)) {
    let n = 0;
    for (const v of value) n += textChars(v, depth + 1);
    return n;
  }
  // Message objects and content parts: their text, not their field names or image data.
  const o = value as Record<string, unknown>;
  let n = 0;
  if (typeof o.text === 'string') n += o.text.length;
  if (o.content !== undefined) n += textChars(o.content, depth + 1);
  if (typeof o.name === 'string') n += o.name.length;
  if (Array.isArray(o.tool_calls)) n += JSON.stringify(o.tool_calls).length;
  return n;
}

export function estimatePromptTokens(body: Readonly<Record<string, unknown>> | undefined): number {
  if (!body) return 0;
  let chars = 0;
  chars += textChars(body.messages);
  chars += textChars(body.prompt);
  chars += textChars(body.input);
  chars += textChars(body.instructions);
  if (Array.isArray(body.tools)) chars += JSON.stringify(body.tools).length;
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

const positiveInt = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined);

export function estimateCompletionTokens(endpoint: EndpointType, body: Readonly<Record<string, unknown>> | undefined): number {
  if (NO_COMPLETION.has(endpoint)) return 0;
  const max = positiveInt(body?.max_completion_tokens) ?? positiveInt(body?.max_tokens) ?? positiveInt(body?.max_output_tokens) ?? DEFAULT_COMPLETION_TOKENS;
  const n = positiveInt(body?.n) ?? 1;
  return max * Math.max(1, n);
}

export interface TokenEstimate {
  prompt: number;
  completion: number;
  total: number;
}

export function estimateTokens(endpoint: EndpointType, body: Readonly<Record<string, unknown>> | undefined): TokenEstimate {
  const prompt = estimatePromptTokens(body);
  const completion = estimateCompletionTokens(endpoint, body);
  return { prompt, completion, total: prompt + completion };
}

/** Prices tokens for cost budgets, in integer micro-dollars (1e-6 USD). */
export interface CostEstimator {
  /** What this many tokens of the model cost; conservative (high) when the model is unknown. */
  micros(input: CostInput): number;
}

export interface CostInput {
  organisationId?: string | undefined;
  workspaceId?: string | undefined;
  /** Unknown before the routing chose a target (as when reserving). */
  provider?: string | undefined;
  model?: string | undefined;
  promptTokens: number;
  completionTokens: number;
}

/**
 * Used until the pricing catalogue is wired in: $10 per million prompt tokens and $30 per million
 * completion tokens, above most models' list prices, so budgets err on the safe side.
 */
export const DEFAULT_COST_ESTIMATOR: CostEstimator = {
  micros: ({ promptTokens, completionTokens }) => Math.ceil(promptTokens * 10 + completionTokens * 30),
};
