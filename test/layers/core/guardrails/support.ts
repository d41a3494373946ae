/** Contexts and a runner for check tests: what the hook runner hands a check, built by hand. */
import type { CheckContext, CheckDeps, CheckResult, GuardrailEvent } from '../../../../layers/core/src/kernel/guardrails.ts';
import { findCheck } from '../../../../layers/core/src/guardrails/registry.ts';
import { requestParts } from '../../../../layers/core/src/guardrails/text.ts';
import type { EndpointType } from '../../../../layers/core/src/providers/types.ts';

export interface CtxInput {
  event?: GuardrailEvent;
  requestType?: EndpointType;
  provider?: string;
  metadata?: Record<string, unknown>;
  json?: Record<string, unknown>;
  text?: string;
  response?: { json?: unknown; text: string };
}

export function ctxOf(input: CtxInput): CheckContext {
  const text = input.text ?? '';
  const ctx: CheckContext = {
    event: input.event ?? 'beforeRequestHook',
    requestType: input.requestType ?? 'chatComplete',
    provider: input.provider ?? 'openai',
    metadata: input.metadata ?? {},
    request: {
      json: input.json ?? { model: 'gpt-4o', messages: [{ role: 'user', content: text }] },
      text,
      parts: input.json ? requestParts(input.requestType ?? 'chatComplete', input.json) : [{ role: 'user', text }],
      scope: 'all',
      isStreamingRequest: false,
    },
  };
  if (input.response) ctx.response = { json: input.response.json ?? null, text: input.response.text, statusCode: 200 };
  return ctx;
}

/** A CheckDeps whose fetch must not be called (local checks). */
export const noNetwork: CheckDeps = {
  fetch: () => Promise.reject(new Error('local checks make no network call')),
  now: () => 0,
};

export async function run(id: string, parameters: Record<string, unknown>, input: CtxInput, deps: CheckDeps = noNetwork): Promise<CheckResult> {
  const def = findCheck(id);
  if (!def) throw new Error(`no check ${id}`);
  const problems = def.validate(parameters);
  if (problems.length) throw new Error(`invalid parameters: ${JSON.stringify(problems)}`);
  return def.run(ctxOf(input), parameters, deps);
}

export function problems(id: string, parameters: Record<string, unknown>): string[] {
  const def = findCheck(id);
  if (!def) throw new Error(`no check ${id}`);
  return def.validate(parameters).map((p) => `${p.path}: ${p.message}`);
}
