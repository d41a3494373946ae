/**
 * Cost of one response from its token usage and a price, in integer micro-dollars (1e-6 USD).
 * A price in USD per million tokens is exactly micro-dollars per token, so the cost is a sum of
 * tokens times prices, rounded once at the end.
 *
 * - Prompt tokens include the cached ones (OpenAI's convention): cached tokens are billed at the
 *   cached-input price when one is published, the rest at the input price.
 * - Reasoning tokens are output. OpenAI counts them inside completion_tokens; a provider whose
 *   total_tokens shows they were counted separately has them added to the output.
 */
import type { TokenUsage } from '../kernel/lifecycle.ts';
import type { TokenPrice } from './catalog.ts';

export function costMicrosOf(price: TokenPrice, usage: TokenUsage): number | undefined {
  if (price.input === undefined && price.output === undefined) return undefined;
  const input = price.input ?? 0;
  const output = price.output ?? 0;
  const prompt = Math.max(0, usage.prompt_tokens || 0);
  const cached = Math.min(prompt, Math.max(0, usage.cached_tokens ?? 0));
  let completion = Math.max(0, usage.completion_tokens || 0);
  const reasoning = Math.max(0, usage.reasoning_tokens ?? 0);
  if (reasoning > 0 && usage.total_tokens >= prompt + completion + reasoning) completion += reasoning;
  const micros = (prompt - cached) * input + cached * (price.cachedInput ?? input) + completion * output;
  return Math.round(micros);
}

/** Micro-dollars as a USD string for the `x-gw-cost` header: `0.000123`. */
export function formatUsd(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(Math.round(micros));
  return `${sign}${Math.floor(abs / 1_000_000)}.${String(abs % 1_000_000).padStart(6, '0')}`;
}
