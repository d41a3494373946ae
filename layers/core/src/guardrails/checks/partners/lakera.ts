/**
 * `lakera.guard`: Lakera Guard (Check Point AI Guardrails) `POST /v2/guard` with the conversation,
 * `project_id`, `breakdown` and `payload`. Lakera screens the last turn; `flagged` fails the check,
 * except when only `pii/*` detectors fired and the spans are in the checked text: then they are
 * redacted and the check passes (transformed).
 */
import type { CheckContext, CheckDefinition, CheckResult } from '../../contract.ts';
import { isRecord, num, paramValidator, str } from '../params.ts';
import { errored, httpUrl, postJson, RemoteCheckError, timeoutRule } from '../remote.ts';
import { checkedText } from '../text-of.ts';
import { conversation, redacted } from './messages.ts';

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

function verdictOf(ctx: CheckContext, answer: Record<string, unknown>, p: Readonly<Record<string, unknown>>, lastIndex: number): CheckResult {
  const data = { flagged: answer.flagged, breakdown: answer.breakdown ?? null };
  if (answer.flagged !== true) return { verdict: true, data };
  if (!piiOnly(answer) || !Array.isArray(answer.payload)) return { verdict: false, data };
  const spans = answer.payload.filter((s): s is Span & Record<string, unknown> => isRecord(s) && typeof s.start === 'number' && typeof s.end === 'number' && (s.message_id === undefined || s.message_id === lastIndex));
  const text = checkedText(ctx);
  return redacted(ctx, text, redactSpans(text, spans, p.endInclusive === true), data) ?? { verdict: false, data };
}

export const lakeraGuard: CheckDefinition = {
  id: 'lakera.guard',
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
      return verdictOf(ctx, answer, p, messages.length - 1);
    } catch (err) {
      return errored(p, err);
    }
  },
};
