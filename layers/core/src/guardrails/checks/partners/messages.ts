/** The conversation a partner screens: the request's texts with their roles, plus the answer after the request. */
import type { CheckContext, CheckResult } from '../../../kernel/guardrails.ts';
import { mapCheckedText } from '../transform.ts';

export interface Turn {
  role: string;
  content: string;
}

export function conversation(ctx: CheckContext): Turn[] {
  const turns: Turn[] = ctx.request.parts.map((p) => ({ role: p.role, content: p.text }));
  if (turns.length === 0) turns.push({ role: 'user', content: ctx.request.text });
  if (ctx.event === 'afterRequestHook') turns.push({ role: 'assistant', content: ctx.response?.text ?? '' });
  return turns;
}

/**
 * The result of a partner that rewrote the checked text (redaction): the request or answer with it
 * replaced. The checked text is its texts joined by new lines, so the rewrite is mapped back line by
 * line; when the partner changed the number of lines it cannot be placed, and the answer is
 * undefined (the caller fails the check rather than claim a redaction that did not happen).
 */
export function redacted(ctx: CheckContext, original: string, replacement: string, data: unknown): CheckResult | undefined {
  if (replacement === original) return { verdict: true, data };
  const lines = replacement.split('\n');
  if (lines.length !== original.split('\n').length) return undefined;
  let at = 0;
  const swap = (t: string): string => {
    // Texts were joined skipping empty ones (guardrails/text.ts), so empty texts map to themselves.
    if (t === '') return t;
    const n = t.split('\n').length;
    const out = lines.slice(at, at + n).join('\n');
    at += n;
    return out;
  };
  const transformedData = mapCheckedText(ctx, swap);
  return transformedData ? { verdict: true, data, transformed: true, transformedData } : undefined;
}
