/** The conversation a partner screens: the request's messages (or its text), plus the answer after the request. */
import type { CheckContext } from '../../contract.ts';
import { isRecord } from '../params.ts';
import { mapRequestText, mapResponseText } from '../transform.ts';
import type { CheckResult } from '../../contract.ts';

export interface Turn {
  role: string;
  content: string;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (isRecord(p) && typeof p.text === 'string' ? p.text : '')).filter(Boolean).join('\n');
}

export function conversation(ctx: CheckContext): Turn[] {
  const messages = ctx.request.json.messages;
  const turns: Turn[] = Array.isArray(messages)
    ? messages.filter(isRecord).map((m) => ({ role: typeof m.role === 'string' ? m.role : 'user', content: contentText(m.content) }))
    : [{ role: 'user', content: ctx.request.text }];
  if (ctx.event === 'afterRequestHook') turns.push({ role: 'assistant', content: ctx.response?.text ?? '' });
  return turns;
}

/** The result of a partner that rewrote the checked text (redaction): the request or answer with it replaced. */
export function redacted(ctx: CheckContext, original: string, replacement: string, data: unknown): CheckResult | undefined {
  const swap = (t: string) => (t === original ? replacement : t);
  if (ctx.event === 'beforeRequestHook') {
    const json = mapRequestText(ctx.requestType, ctx.request.json, swap);
    return json ? { verdict: true, data, transformed: true, transformedData: { request: { json } } } : undefined;
  }
  const json = mapResponseText(ctx.response?.json, swap);
  return json === undefined ? undefined : { verdict: true, data, transformed: true, transformedData: { response: { json } } };
}
