/**
 * `default.requestParametersCheck` (docs/design/spec.md#guardrail-checks), before the request: the
 * tools it offers (`tools`: allowed and blocked types and function names, read from `tools[].type`,
 * `tools[].function.name` and `tools[].name`) and its parameters (`params`: allowed and blocked
 * top-level keys, and for each named parameter the values allowed or blocked). Every list is
 * optional and an empty one does not constrain.
 */
import type { CheckDefinition } from '../../kernel/guardrails.ts';
import { isRecord, paramValidator, strings } from './params.ts';

const toolsSpec = {
  blockedTypes: { type: 'strings' },
  allowedTypes: { type: 'strings' },
  blockedFunctionNames: { type: 'strings' },
  allowedFunctionNames: { type: 'strings' },
} as const;

/** The keys that make the request what it is: never refused by `allowedKeys`. */
const ESSENTIAL_KEYS = new Set(['model', 'messages', 'prompt', 'input']);

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

function toolViolations(tools: unknown, rules: Record<string, unknown>): string[] {
  if (!Array.isArray(tools)) return [];
  const out: string[] = [];
  const [allowedTypes, blockedTypes] = [strings(rules.allowedTypes), strings(rules.blockedTypes)];
  const [allowedNames, blockedNames] = [strings(rules.allowedFunctionNames), strings(rules.blockedFunctionNames)];
  tools.forEach((tool, i) => {
    if (!isRecord(tool)) return;
    const type = typeof tool.type === 'string' ? tool.type : 'function';
    const fn = isRecord(tool.function) ? tool.function.name : tool.name;
    if (blockedTypes.includes(type)) out.push(`tools[${i}].type: ${type} is blocked`);
    else if (allowedTypes.length > 0 && !allowedTypes.includes(type)) out.push(`tools[${i}].type: ${type} is not allowed`);
    if (typeof fn !== 'string') return;
    if (blockedNames.includes(fn)) out.push(`tools[${i}]: function ${fn} is blocked`);
    else if (allowedNames.length > 0 && !allowedNames.includes(fn)) out.push(`tools[${i}]: function ${fn} is not allowed`);
  });
  return out;
}

function paramViolations(json: Readonly<Record<string, unknown>>, rules: Record<string, unknown>): string[] {
  const out: string[] = [];
  const [allowed, blocked] = [strings(rules.allowedKeys), strings(rules.blockedKeys)];
  for (const key of Object.keys(json)) {
    if (blocked.includes(key)) out.push(`${key}: parameter is blocked`);
    else if (allowed.length > 0 && !allowed.includes(key) && !ESSENTIAL_KEYS.has(key)) out.push(`${key}: parameter is not allowed`);
  }
  const values = isRecord(rules.values) ? rules.values : {};
  for (const [key, rule] of Object.entries(values)) {
    if (!(key in json) || !isRecord(rule)) continue;
    const v = json[key];
    const allowedValues = Array.isArray(rule.allowedValues) ? rule.allowedValues : [];
    const blockedValues = Array.isArray(rule.blockedValues) ? rule.blockedValues : [];
    if (blockedValues.some((b) => same(b, v))) out.push(`${key}: value ${JSON.stringify(v)} is blocked`);
    else if (allowedValues.length > 0 && !allowedValues.some((a) => same(a, v))) out.push(`${key}: value ${JSON.stringify(v)} is not allowed`);
  }
  return out;
}

function valuesProblems(values: unknown): { path: string; message: string }[] {
  if (values === undefined) return [];
  if (!isRecord(values)) return [{ path: 'params.values', message: 'must be an object of parameter names to {allowedValues, blockedValues}' }];
  const out: { path: string; message: string }[] = [];
  for (const [key, rule] of Object.entries(values)) {
    const at = `params.values.${key}`;
    if (!isRecord(rule)) {
      out.push({ path: at, message: 'must be an object ({"allowedValues": [...]} or {"blockedValues": [...]})' });
      continue;
    }
    for (const k of Object.keys(rule)) {
      if (k !== 'allowedValues' && k !== 'blockedValues') out.push({ path: `${at}.${k}`, message: 'unknown key (known: allowedValues, blockedValues)' });
      else if (!Array.isArray(rule[k])) out.push({ path: `${at}.${k}`, message: 'must be an array' });
    }
  }
  return out;
}

export const requestParametersCheck: CheckDefinition = {
  id: 'default.requestParametersCheck',
  events: ['beforeRequestHook'],
  validate: paramValidator(
    {
      tools: { type: 'object', fields: toolsSpec },
      params: { type: 'object', fields: { blockedKeys: { type: 'strings' }, allowedKeys: { type: 'strings' }, values: { type: 'any' } } },
    },
    (p) => valuesProblems(isRecord(p.params) ? p.params.values : undefined),
  ),
  async run(ctx, p) {
    const json = ctx.request.json;
    const violations = [...(isRecord(p.tools) ? toolViolations(json.tools, p.tools) : []), ...(isRecord(p.params) ? paramViolations(json, p.params) : [])];
    return { verdict: violations.length === 0, data: { violations } };
  },
};
