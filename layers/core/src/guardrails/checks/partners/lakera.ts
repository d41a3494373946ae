/**
 * `lakera.guard`: Lakera Guard (Check Point AI Guardrails) `POST /v2/guard` with the conversation,
 * `project_id`, `breakdown` and `payload`. Lakera screens the last turn; `flagged` fails the check,
 * except when only `pii/*` detectors fired and the spans are in the checked text: then they are
 * redacted and the check passes (transformed).
 */
import type { CheckContext, CheckDefinition, CheckResult } from '../../../kernel/guardrails.ts';
import { isRecord, num, paramValidator, str } from '../params.ts';
import { errored, httpUrl, postJson, RemoteCheckError, timeoutRule } from '../remote.ts';
import { conversation, redacted, type Turn } from './messages.ts';

export const LAKERA_BASE_URL = 'https://api.lakera.ai';

interface Span {
  start: number;
  end: number;
}

function piiOnly(answer: Record<string, unknown>): boolean {
  const fired = Array.isArray(answer.breakdown) ? answer.breakdown.filter((b) => isRecord(b) && b.detected === true) : [];
  return fired.length > 0 && fired.every((b) => isRecord(b) && typeof b.detector_type === 'string' && b.detector_type.startsWith('pii/'));
}

function redactSpans(text: string, spans: readonly Span[], endInclusive: boolean): string {
  let out = text;
  for (const s of [...spans].sort((a, b) => b.start - a.start)) {
    const end = endInclusive ? s.end + 1 : s.end;
    if (s.start < 0 || end > out.length || s.start >= end) continue;
    out = `${out.slice(0, s.start)}[REDACTED]${out.slice(end)}`;
  }
  return out;
}

function verdictOf(ctx: CheckContext, answer: Record<string, unknown>, p: Readonly<Record<string, unknown>>, turns: readonly Turn[]): CheckResult {
  const data = { flagged: answer.flagged, breakdown: answer.breakdown ?? null };
  if (answer.flagged !== true) return { verdict: true, data };
  if (!piiOnly(answer) || !Array.isArray(answer.payload)) return { verdict: false, data };
  const spans = answer.payload.filter((s): s is Span & Record<string, unknown> => isRecord(s) && typeof s.start === 'number' && typeof s.end === 'number');
  // Spans name the turn they are in (the last when they do not); the checked text is the request's
  // turns (before the request) or the answer (the last turn, after it).
  const last = turns.length - 1;
  const turnOf = (s: Record<string, unknown>): number => (typeof s.message_id === 'number' ? s.message_id : last);
  const redactTurn = (i: number, text: string): string =>
    redactSpans(
      text,
      spans.filter((s) => turnOf(s) === i),
      p.endInclusive === true,
    );
  const checked = ctx.event === 'afterRequestHook' ? [last] : turns.map((_, i) => i).slice(0, ctx.request.parts.length || 1);
  if (spans.some((s) => !checked.includes(turnOf(s)))) return { verdict: false, data };
  const original = checked.map((i) => turns[i]!.content).join('\n');
  const replacement = checked.map((i) => redactTurn(i, turns[i]!.content)).join('\n');
  return redacted(ctx, original, replacement, data) ?? { verdict: false, data };
}

export const lakeraGuard: CheckDefinition = {
  id: 'lakera.guard',
  transforms: true,
  events: ['beforeRequestHook', 'afterRequestHook'],
  validate: paramValidator({
    credentials: { type: 'object', required: true, fields: { apiKey: { type: 'string', required: true, nonEmpty: true }, baseUrl: httpUrl } },
    projectID: { type: 'string', nonEmpty: true },
    endInclusive: { type: 'boolean' },
    timeout: timeoutRule,
  }),
  async run(ctx, p, deps) {
    const creds = p.credentials as Record<string, unknown>;
    const messages = conversation(ctx);
    const body: Record<string, unknown> = { messages, breakdown: true, payload: true };
    if (typeof p.projectID === 'string') body.project_id = p.projectID;
    try {
      const answer = await postJson(deps, 'Lakera Guard', `${str(creds.baseUrl, LAKERA_BASE_URL).replace(/\/+$/, '')}/v2/guard`, body, {
        headers: { authorization: `Bearer ${str(creds.apiKey)}` },
        timeoutMs: num(p.timeout, 30_000),
      });
      if (!isRecord(answer) || typeof answer.flagged !== 'boolean') throw new RemoteCheckError('Lakera Guard answered without "flagged"');
      return verdictOf(ctx, answer, p, messages);
    } catch (err) {
      return errored(p, err);
    }
  },
};
