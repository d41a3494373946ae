/**
 * Rewriting the text a check reads, for the mutators. Which texts those are is defined once, in
 * guardrails/text.ts (the request's texts in the hook's scope; every text of the answer); this
 * module adds what mutators need beside it. A copy is returned; the context's JSON is never changed
 * in place.
 */
import type { CheckContext } from '../../kernel/guardrails.ts';
import { mapRequestText, mapResponseText, type TextVisit } from '../text.ts';
import { isRecord } from './params.ts';

export type TextMap = TextVisit;

/** A message content with `fn` applied to its text (a string, or each text part). */
export function mapContent(content: unknown, fn: (text: string) => string): unknown {
  if (typeof content === 'string') return fn(content);
  if (!Array.isArray(content)) return content;
  return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? { ...part, text: fn(part.text) } : part));
}

/**
 * The request or the answer the check read (by its event) with `fn` applied to each of its texts;
 * undefined when its shape carries no text, or when nothing changed.
 */
export function mapCheckedText(ctx: CheckContext, fn: TextMap): { request?: { json: Record<string, unknown> }; response?: { json: unknown } } | undefined {
  if (ctx.event === 'beforeRequestHook') {
    const json = mapRequestText(ctx.requestType, ctx.request.json, fn, ctx.request.scope);
    return json && json !== ctx.request.json ? { request: { json } } : undefined;
  }
  const json = mapResponseText(ctx.response?.json, fn);
  return json !== undefined && json !== ctx.response?.json ? { response: { json } } : undefined;
}
