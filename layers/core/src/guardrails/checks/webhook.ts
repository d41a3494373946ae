/**
 * `default.webhook`: POSTs the check's context (event, request type, provider, metadata, request
 * and answer; never the request's headers) to `webhookURL` and takes `{verdict, transformedData?}`
 * back. `timeout` defaults to 3 s; a timeout or an error passes unless `failOnError: true`.
 */
import type { CheckDefinition, CheckResult } from '../../kernel/guardrails.ts';
import { isRecord, num, paramValidator, str } from './params.ts';
import { errored, httpUrl, postJson, RemoteCheckError, timeoutRule } from './remote.ts';

export const DEFAULT_WEBHOOK_TIMEOUT_MS = 3000;

function transformedOf(raw: unknown): CheckResult['transformedData'] | undefined {
  if (!isRecord(raw)) return undefined;
  const out: NonNullable<CheckResult['transformedData']> = {};
  if (isRecord(raw.request) && isRecord(raw.request.json)) out.request = { json: raw.request.json };
  if (isRecord(raw.response) && raw.response.json !== undefined) out.response = { json: raw.response.json };
  return out.request || out.response ? out : undefined;
}

export const webhook: CheckDefinition = {
  id: 'default.webhook',
  transforms: true,
  events: ['beforeRequestHook', 'afterRequestHook'],
  validate: paramValidator({
    webhookURL: { ...httpUrl, required: true },
    headers: { type: 'record', values: 'string' },
    timeout: timeoutRule,
  }),
  async run(ctx, p, deps) {
    try {
      const answer = await postJson(
        deps,
        'The webhook',
        str(p.webhookURL),
        { ...ctx, eventType: ctx.event },
        {
          headers: isRecord(p.headers) ? (p.headers as Record<string, string>) : {},
          timeoutMs: num(p.timeout, DEFAULT_WEBHOOK_TIMEOUT_MS),
        },
      );
      if (!isRecord(answer) || typeof answer.verdict !== 'boolean') throw new RemoteCheckError('The webhook answered without a boolean "verdict"');
      const transformedData = transformedOf(answer.transformedData);
      const data = answer.data ?? null;
      return transformedData ? { verdict: answer.verdict, data, transformed: true, transformedData } : { verdict: answer.verdict, data };
    } catch (err) {
      return errored(p, err);
    }
  },
};
