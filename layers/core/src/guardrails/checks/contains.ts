/**
 * `default.contains`: `words` looked for in the text (case-sensitive); `operator` `any` (default:
 * passes when one is there), `all` (every one is), `none` (none is).
 */
import type { FieldProblem } from '../../http/errors.ts';
import type { CheckDefinition } from '../../kernel/guardrails.ts';
import { checkedText } from './text-of.ts';

const OPERATORS = ['any', 'all', 'none'] as const;

export const contains: CheckDefinition = {
  id: 'default.contains',
  events: ['beforeRequestHook', 'afterRequestHook'],
  validate(p) {
    const problems: FieldProblem[] = [];
    if (!Array.isArray(p.words) || p.words.length === 0) problems.push({ path: 'words', message: 'must be a non-empty array of strings' });
    else {
      p.words.forEach((w: unknown, i) => {
        if (typeof w !== 'string' || w === '') problems.push({ path: `words[${i}]`, message: 'must be a non-empty string' });
      });
    }
    if (p.operator !== undefined && !OPERATORS.includes(p.operator as (typeof OPERATORS)[number])) {
      problems.push({ path: 'operator', message: `must be one of ${OPERATORS.join(', ')}` });
    }
    return problems;
  },
  async run(ctx, p) {
    const text = checkedText(ctx);
    const words = (p.words as string[]).filter((w) => text.includes(w));
    const all = (p.words as string[]).length;
    const operator = (p.operator as string | undefined) ?? 'any';
    const verdict = operator === 'all' ? words.length === all : operator === 'none' ? words.length === 0 : words.length > 0;
    return { verdict, data: { found: words, operator } };
  },
};
