/**
 * `bedrock.guard`: AWS Bedrock ApplyGuardrail (`POST /guardrail/{id}/version/{version}/apply`,
 * SigV4-signed for `bedrock`) with the checked text as INPUT (before the request) or OUTPUT (after).
 * `GUARDRAIL_INTERVENED` fails the check, except with `redact: true` when only sensitive
 * information was anonymised: then Bedrock's masked text replaces the original and the check passes.
 */
import type { CheckDefinition } from '../../../kernel/guardrails.ts';
import { signAws } from '../../../providers/native/aws.ts';
import { isRecord, num, paramValidator, str } from '../params.ts';
import { errored, httpUrl, postJson, RemoteCheckError, timeoutRule } from '../remote.ts';
import { checkedText } from '../text-of.ts';
import { redacted } from './messages.ts';

/** Whether every filter that acted only anonymised (no BLOCKED anywhere). */
function onlyAnonymised(assessments: unknown): boolean {
  const actions: string[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (isRecord(v)) for (const [k, x] of Object.entries(v)) k === 'action' && typeof x === 'string' ? actions.push(x) : walk(x);
  };
  walk(assessments);
  const acted = actions.filter((a) => a !== 'NONE');
  return acted.length > 0 && acted.every((a) => a === 'ANONYMIZED');
}

export const bedrockGuard: CheckDefinition = {
  id: 'bedrock.guard',
  transforms: true,
  events: ['beforeRequestHook', 'afterRequestHook'],
  validate: paramValidator({
    credentials: {
      type: 'object',
      required: true,
      fields: {
        accessKeyId: { type: 'string', required: true, nonEmpty: true },
        secretAccessKey: { type: 'string', required: true, nonEmpty: true },
        sessionToken: { type: 'string' },
        region: {
          type: 'string',
          required: true,
          check: (v) => (/^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d$/.test(v) ? null : 'must be an AWS region such as us-east-1'),
        },
        endpoint: httpUrl,
      },
    },
    guardrailId: {
      type: 'string',
      required: true,
      check: (v) => (/^([a-z0-9]+|arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:\d{12}:guardrail\/[a-z0-9]+)$/.test(v) ? null : 'must be a guardrail id or ARN'),
    },
    guardrailVersion: { type: 'string', required: true, check: (v) => (/^([1-9]\d{0,7}|DRAFT)$/.test(v) ? null : 'must be a version number or DRAFT') },
    redact: { type: 'boolean' },
    timeout: timeoutRule,
  }),
  async run(ctx, p, deps) {
    const c = p.credentials as Record<string, unknown>;
    const region = str(c.region);
    const base = str(c.endpoint, `https://bedrock-runtime.${region}.amazonaws.com`).replace(/\/+$/, '');
    const url = new URL(`${base}/guardrail/${encodeURIComponent(str(p.guardrailId))}/version/${str(p.guardrailVersion)}/apply`);
    const text = checkedText(ctx);
    const creds = {
      accessKeyId: str(c.accessKeyId),
      secretAccessKey: str(c.secretAccessKey),
      ...(typeof c.sessionToken === 'string' ? { sessionToken: c.sessionToken } : {}),
    };
    const sign = async (body: string) =>
      (await signAws({ url, method: 'POST', headers: { 'content-type': 'application/json' }, body }, creds, region, 'bedrock', deps.now())).headers;
    try {
      const source = ctx.event === 'beforeRequestHook' ? 'INPUT' : 'OUTPUT';
      const answer = await postJson(deps, 'AWS Bedrock', url.href, { source, content: [{ text: { text } }] }, { sign, timeoutMs: num(p.timeout, 5000) });
      if (!isRecord(answer) || typeof answer.action !== 'string') throw new RemoteCheckError('AWS Bedrock answered without "action"');
      const data = { action: answer.action, assessments: answer.assessments ?? null };
      if (answer.action !== 'GUARDRAIL_INTERVENED') return { verdict: true, data };
      const outputs = Array.isArray(answer.outputs) ? answer.outputs.filter(isRecord) : [];
      const masked = outputs.map((o) => str(o.text)).join('');
      if (p.redact === true && outputs.length > 0 && onlyAnonymised(answer.assessments)) return redacted(ctx, text, masked, data) ?? { verdict: false, data };
      return { verdict: false, data };
    } catch (err) {
      return errored(p, err);
    }
  },
};
