/**
 * `default.regexMatch`: passes when the text matches `rule` (or, with `not: true`, when it does
 * not). Rules are compiled once per distinct source: a stream checks many windows with one rule.
 */
import type { FieldProblem } from '../../http/errors.ts';
import type { CheckDefinition } from '../../kernel/guardrails.ts';
import { checkedText } from './text-of.ts';

export const MAX_RULE_LENGTH = 1000;
const compiled = new Map<string, RegExp>();

function compile(rule: string): RegExp {
  let re = compiled.get(rule);
  if (!re) {
    re = new RegExp(rule, 'u');
    // Bounded: configs are few, but a hostile caller could send many inline rules.
    if (compiled.size >= 256) compiled.clear();
    compiled.set(rule, re);
  }
  return re;
}

export const regexMatch: CheckDefinition = {
  id: 'default.regexMatch',
  events: ['beforeRequestHook', 'afterRequestHook'],
  validate(p) {
    const problems: FieldProblem[] = [];
    if (typeof p.rule !== 'string' || p.rule === '') problems.push({ path: 'rule', message: 'must be a non-empty string' });
    else if (p.rule.length > MAX_RULE_LENGTH) problems.push({ path: 'rule', message: `must be at most ${MAX_RULE_LENGTH} characters` });
    else {
      try {
        new RegExp(p.rule, 'u');
      } catch {
        problems.push({ path: 'rule', message: 'is not a valid regular expression' });
      }
    }
    if (p.not !== undefined && typeof p.not !== 'boolean') problems.push({ path: 'not', message: 'must be a boolean' });
    return problems;
  },
  async run(ctx, p) {
    const match = compile(String(p.rule)).exec(checkedText(ctx));
    const not = p.not === true;
    return { verdict: not ? match === null : match !== null, data: { matched: match !== null, not } };
  },
};
