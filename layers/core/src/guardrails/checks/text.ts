/**
 * Checks on the shape of the text: sentence, word and character counts, case, suffix, emptiness
 * and code blocks. Each passes when the text satisfies it; `not: true` inverts the verdict.
 */
import type { CheckDefinition, CheckResult } from '../../kernel/guardrails.ts';
import { num, paramValidator, str, type ParamSpec } from './params.ts';
import { checkedText } from './text-of.ts';

const EVENTS = ['beforeRequestHook', 'afterRequestHook'] as const;
const NOT: ParamSpec = { not: { type: 'boolean' } };

const inverted = (p: Readonly<Record<string, unknown>>, verdict: boolean, data: unknown): CheckResult => ({
  verdict: p.not === true ? !verdict : verdict,
  data,
});

/** A check that a count of the text lies within [min, max]. */
function countCheck(id: string, minKey: string, maxKey: string, defaultMax: number, count: (text: string) => number): CheckDefinition {
  return {
    id,
    events: EVENTS,
    validate: paramValidator({ [minKey]: { type: 'number', min: 0 }, [maxKey]: { type: 'number', min: 0 }, ...NOT }, (p) =>
      num(p[minKey], 0) > num(p[maxKey], defaultMax) ? [{ path: minKey, message: `must not be greater than ${maxKey}` }] : [],
    ),
    async run(ctx, p) {
      const n = count(checkedText(ctx));
      const min = num(p[minKey], 0);
      const max = num(p[maxKey], defaultMax);
      return inverted(p, n >= min && n <= max, { count: n, min, max });
    },
  };
}

export const countSentences = (text: string): number => text.split(/[.!?]+(?:\s+|$)/).filter((s) => s.trim() !== '').length;
export const countWords = (text: string): number => text.split(/\s+/).filter((w) => w !== '').length;

export const sentenceCount = countCheck('default.sentenceCount', 'minSentences', 'maxSentences', 99_999, countSentences);
export const wordCount = countCheck('default.wordCount', 'minWords', 'maxWords', 99_999, countWords);
export const characterCount = countCheck('default.characterCount', 'minCharacters', 'maxCharacters', 9_999_999, (t) => [...t].length);

/** Case checks look at letters only: "HELLO, 123!" is all upper case. */
function caseCheck(id: string, upper: boolean): CheckDefinition {
  return {
    id,
    events: EVENTS,
    validate: paramValidator(NOT),
    async run(ctx, p) {
      const letters = checkedText(ctx).replace(/[^\p{L}]/gu, '');
      const holds = letters === (upper ? letters.toUpperCase() : letters.toLowerCase());
      return inverted(p, holds, { letters: letters.length });
    },
  };
}

export const alluppercase = caseCheck('default.alluppercase', true);
export const alllowercase = caseCheck('default.alllowercase', false);

export const endsWith: CheckDefinition = {
  id: 'default.endsWith',
  events: EVENTS,
  validate: paramValidator({ suffix: { type: 'string', required: true, nonEmpty: true }, ...NOT }),
  async run(ctx, p) {
    const suffix = str(p.suffix);
    return inverted(p, checkedText(ctx).trimEnd().endsWith(suffix), { suffix });
  },
};

/** The answer (or the request) has text: fails on an empty or whitespace-only text. */
export const notNull: CheckDefinition = {
  id: 'default.notNull',
  events: EVENTS,
  validate: paramValidator(NOT),
  async run(ctx, p) {
    return inverted(p, checkedText(ctx).trim() !== '', {});
  },
};

export const CODE_FORMATS = [
  'SQL',
  'Python',
  'TypeScript',
  'JavaScript',
  'Java',
  'C#',
  'C++',
  'C',
  'Ruby',
  'PHP',
  'Swift',
  'Kotlin',
  'Go',
  'Rust',
  'Scala',
  'R',
  'Perl',
  'Shell',
  'HTML',
  'CSS',
  'XML',
  'JSON',
  'YAML',
  'Markdown',
  'Dockerfile',
] as const;

/** Fence labels (lower case) as the formats they name. */
const FENCE_ALIASES: Readonly<Record<string, string>> = {
  py: 'Python',
  python3: 'Python',
  ts: 'TypeScript',
  tsx: 'TypeScript',
  js: 'JavaScript',
  jsx: 'JavaScript',
  node: 'JavaScript',
  'c#': 'C#',
  cs: 'C#',
  csharp: 'C#',
  'c++': 'C++',
  cpp: 'C++',
  cxx: 'C++',
  rb: 'Ruby',
  kt: 'Kotlin',
  golang: 'Go',
  rs: 'Rust',
  pl: 'Perl',
  sh: 'Shell',
  bash: 'Shell',
  zsh: 'Shell',
  shell: 'Shell',
  console: 'Shell',
  yml: 'YAML',
  md: 'Markdown',
  docker: 'Dockerfile',
};

function formatOfFence(label: string): string | undefined {
  const lower = label.toLowerCase();
  return FENCE_ALIASES[lower] ?? CODE_FORMATS.find((f) => f.toLowerCase() === lower);
}

/** The text holds a fenced code block (```lang) of `format`. */
export const containsCode: CheckDefinition = {
  id: 'default.containsCode',
  events: EVENTS,
  validate: paramValidator({ format: { type: 'enum', values: CODE_FORMATS, required: true }, ...NOT }),
  async run(ctx, p) {
    const formats = [...checkedText(ctx).matchAll(/```([^\s`]+)/g)].map((m) => formatOfFence(m[1] ?? '')).filter((f) => f !== undefined);
    return inverted(p, formats.includes(str(p.format)), { format: p.format, found: [...new Set(formats)] });
  },
};
