/**
 * OpenAI-wire streams (Azure OpenAI, Azure AI Foundry, Vertex's OpenAI-compatible endpoint) passed
 * through event by event. The request always asks the provider for usage, so the log gets it; the
 * usage chunk only reaches clients that asked for it themselves. Events are forwarded as received;
 * only those mentioning usage or a finish reason are parsed.
 */
import type { ChatUsage, FinishReason, ProviderRequestContext, StreamOutcome, StreamTransformer } from '../transform.ts';
import { isRecord } from '../../http/json.ts';
import { providerError, SSE_DONE } from './chat-output.ts';
import { sseReader } from './sse-in.ts';

/** The body with `stream_options.include_usage` forced on for streams. */
export function withStreamUsage(body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext): Record<string, unknown> {
  if (!ctx.stream) return { ...body };
  return { ...body, stream_options: { ...(isRecord(body.stream_options) ? body.stream_options : {}), include_usage: true } };
}

export function openAIStream(ctx: ProviderRequestContext): StreamTransformer {
  const outcome: StreamOutcome = {};
  let out = '';
  let done = false;
  let events = 0;
  const reader = sseReader((event) => {
    if (done) return;
    if (event.data === '[DONE]') {
      done = true;
      return;
    }
    events += 1;
    const data = event.data;
    // Azure opens streams with a chunk of prompt_filter_results and no choices: an extra that would
    // make the first chunk one without the role.
    if (ctx.strictOpenAICompliance && data.includes('"prompt_filter_results"') && data.includes('"choices":[]') && !data.includes('"usage"')) return;
    if (
      data.includes('"usage"') ||
      data.includes('"finish_reason":"') ||
      data.includes('"error"') ||
      (outcome.model === undefined && data.includes('"model"'))
    ) {
      try {
        const chunk: unknown = JSON.parse(data);
        if (isRecord(chunk)) {
          if (typeof chunk.model === 'string' && chunk.model) outcome.model = chunk.model;
          if (isRecord(chunk.error)) outcome.error = { error: chunk.error as never };
          const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
          const first = choices[0];
          if (isRecord(first) && typeof first.finish_reason === 'string') outcome.finishReason = first.finish_reason as FinishReason;
          if (isRecord(chunk.usage)) {
            outcome.usage = chunk.usage as unknown as ChatUsage;
            // The usage-only chunk exists because we asked for it; the client did not.
            if (choices.length === 0 && !ctx.includeUsage) return;
          }
        }
      } catch {
        // not JSON: forwarded as it is
      }
    }
    out += `data: ${data}\n\n`;
  });
  const drain = () => {
    const s = out;
    out = '';
    return s;
  };
  return {
    push(chunk) {
      reader.push(chunk);
      return drain();
    },
    end() {
      reader.end();
      const rest = drain();
      if (done || outcome.error) return rest + SSE_DONE;
      if (events > 0 && outcome.finishReason) return rest + SSE_DONE;
      const truncated = providerError(502, 'The provider stream ended before the answer was complete', 'stream_truncated');
      outcome.error = truncated;
      return `${rest}data: ${JSON.stringify(truncated)}\n\n${SSE_DONE}`;
    },
    outcome: () => ({ ...outcome }),
  };
}
