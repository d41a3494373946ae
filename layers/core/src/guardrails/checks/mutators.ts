/**
 * Mutators: `default.regexReplace` redacts what a rule matches (in the request before it leaves,
 * or in the answer before the client sees it), `default.addPrefix` puts text before the prompt.
 */
import type { CheckDefinition, CheckResult } from '../../kernel/guardrails.ts';
import { isRecord, paramValidator, str } from './params.ts';
import { MAX_RULE_LENGTH } from './regex-match.ts';
import { checkedText } from './text-of.ts';
import { mapCheckedText, mapContent } from './transform.ts';

const replacers = new Map<string, RegExp>();

/** A global rule, compiled once per source (bounded: inline configs may carry many rules). */
function compileGlobal(rule: string): RegExp {
  let re = replacers.get(rule);
  if (!re) {
    re = new RegExp(rule, 'gu');
    if (replacers.size >= 256) replacers.clear();
    replacers.set(rule, re);
  }
  return re;
}

function ruleProblem(rule: string): string | null {
  try {
    new RegExp(rule, 'u');
    return null;
  } catch {
    return 'is not a valid regular expression';
  }
}

export const regexReplace: CheckDefinition = {
  id: 'default.regexReplace',
  transforms: true,
  events: ['beforeRequestHook', 'afterRequestHook'],
  validate: paramValidator({
    rule: { type: 'string', required: true, nonEmpty: true, maxLength: MAX_RULE_LENGTH, check: ruleProblem },
    redactText: { type: 'string' },
    failOnDetection: { type: 'boolean' },
  }),
  async run(ctx, p) {
    const re = compileGlobal(str(p.rule));
    const matches = checkedText(ctx).match(re)?.length ?? 0;
    const verdict = !(p.failOnDetection === true && matches > 0);
    if (matches === 0) return { verdict, data: { matches } };
    const redact = (t: string) => t.replace(re, str(p.redactText, '[REDACTED]'));
    const transformedData = mapCheckedText(ctx, redact);
    return transformedData ? { verdict, data: { matches }, transformed: true, transformedData } : { verdict, data: { matches } };
  },
};

const ROLES = ['user', 'system', 'developer', 'assistant'] as const;

function prefixedMessages(messages: readonly unknown[], p: Readonly<Record<string, unknown>>): unknown[] | undefined {
  const prefix = str(p.prefix);
  const role = str(p.applyToRole, 'user');
  let at = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isRecord(m) && m.role === role) {
      at = i;
      break;
    }
  }
  if (at !== -1 && p.onlyIfEmpty === true) return undefined;
  if (at === -1 || p.addToExisting === false) {
    // A new message: system-like roles go first, others last.
    const message = { role, content: prefix };
    return role === 'system' || role === 'developer' ? [message, ...messages] : [...messages, message];
  }
  const out = [...messages];
  const target = out[at] as Record<string, unknown>;
  let done = false;
  const once = (t: string) => (done ? t : ((done = true), prefix + t));
  out[at] = { ...target, content: mapContent(target.content, once) };
  return out;
}

export const addPrefix: CheckDefinition = {
  id: 'default.addPrefix',
  transforms: true,
  events: ['beforeRequestHook'],
  validate: paramValidator({
    prefix: { type: 'string', required: true, nonEmpty: true },
    applyToRole: { type: 'enum', values: ROLES },
    addToExisting: { type: 'boolean' },
    onlyIfEmpty: { type: 'boolean' },
  }),
  async run(ctx, p): Promise<CheckResult> {
    const json = ctx.request.json;
    let next: Record<string, unknown> | undefined;
    if (ctx.requestType === 'chatComplete' && Array.isArray(json.messages)) {
      const messages = prefixedMessages(json.messages, p);
      next = messages ? { ...json, messages } : undefined;
    } else if (ctx.requestType === 'complete' || ctx.requestType === 'createModelResponse') {
      const key = ctx.requestType === 'complete' ? 'prompt' : 'input';
      next = typeof json[key] === 'string' ? { ...json, [key]: str(p.prefix) + str(json[key]) } : undefined;
    }
    return next
      ? { verdict: true, data: { prefixed: true }, transformed: true, transformedData: { request: { json: next } } }
      : { verdict: true, data: { prefixed: false } };
  },
};
