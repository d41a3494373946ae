/**
 * Parameter rules of the checks: each check declares its parameters as data and gets one validator
 * that names every problem by its path (`operator: must be one of all, any, none`). Keys a check
 * does not declare are refused, so a misspelt `maxWord` does not silently do nothing.
 */
import type { FieldProblem } from '../../http/errors.ts';

export type ParamRule =
  | { type: 'string'; required?: boolean; nonEmpty?: boolean; maxLength?: number; check?: (v: string) => string | null }
  | { type: 'boolean' }
  | { type: 'number'; required?: boolean; min?: number; max?: number; integer?: boolean }
  | { type: 'enum'; values: readonly string[]; required?: boolean }
  | { type: 'strings'; required?: boolean; nonEmpty?: boolean; values?: readonly string[] }
  | { type: 'record'; required?: boolean; values?: 'string' | 'strings' | 'any' }
  | { type: 'object'; required?: boolean; fields?: ParamSpec }
  | { type: 'any' };

export type ParamSpec = Readonly<Record<string, ParamRule>>;

/** Parameters every check takes: `failOnError` is read by the hook runner. */
const COMMON: ParamSpec = { failOnError: { type: 'boolean' } };

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

function ruleProblem(rule: ParamRule, v: unknown, path: string, problems: FieldProblem[]): void {
  const add = (message: string): void => {
    problems.push({ path, message });
  };
  switch (rule.type) {
    case 'string':
      if (typeof v !== 'string') return add('must be a string');
      if (rule.nonEmpty && v === '') return add('must not be empty');
      if (rule.maxLength !== undefined && v.length > rule.maxLength) return add(`must be at most ${rule.maxLength} characters`);
      if (rule.check) {
        const why = rule.check(v);
        if (why) add(why);
      }
      return;
    case 'boolean':
      if (typeof v !== 'boolean') add('must be a boolean');
      return;
    case 'number':
      if (typeof v !== 'number' || !Number.isFinite(v)) return add('must be a number');
      if (rule.integer && !Number.isInteger(v)) return add('must be an integer');
      if (rule.min !== undefined && v < rule.min) return add(`must be at least ${rule.min}`);
      if (rule.max !== undefined && v > rule.max) add(`must be at most ${rule.max}`);
      return;
    case 'enum':
      if (typeof v !== 'string' || !rule.values.includes(v)) add(`must be one of ${rule.values.join(', ')}`);
      return;
    case 'strings':
      stringsProblem(rule, v, path, problems);
      return;
    case 'record':
      recordProblem(rule, v, path, problems);
      return;
    case 'object':
      if (!isRecord(v)) return add('must be an object');
      if (rule.fields) specProblems(rule.fields, v, `${path}.`, problems);
      return;
    case 'any':
      return;
  }
}

function stringsProblem(rule: Extract<ParamRule, { type: 'strings' }>, v: unknown, path: string, problems: FieldProblem[]): void {
  if (!isStringArray(v)) {
    problems.push({ path, message: 'must be an array of strings' });
    return;
  }
  if (rule.nonEmpty && v.length === 0) problems.push({ path, message: 'must not be empty' });
  if (!rule.values) return;
  v.forEach((x, i) => {
    if (!rule.values?.includes(x)) problems.push({ path: `${path}[${i}]`, message: `must be one of ${rule.values?.join(', ')}` });
  });
}

function recordProblem(rule: Extract<ParamRule, { type: 'record' }>, v: unknown, path: string, problems: FieldProblem[]): void {
  if (!isRecord(v)) {
    problems.push({ path, message: 'must be an object' });
    return;
  }
  for (const [k, x] of Object.entries(v)) {
    if (rule.values === 'string' && typeof x !== 'string') problems.push({ path: `${path}.${k}`, message: 'must be a string' });
    if (rule.values === 'strings' && !isStringArray(x)) problems.push({ path: `${path}.${k}`, message: 'must be an array of strings' });
  }
}

function specProblems(spec: ParamSpec, params: Readonly<Record<string, unknown>>, prefix: string, problems: FieldProblem[]): void {
  for (const [key, rule] of Object.entries(spec)) {
    const v = params[key];
    if (v === undefined) {
      if ('required' in rule && rule.required) problems.push({ path: `${prefix}${key}`, message: 'is required' });
      continue;
    }
    ruleProblem(rule, v, `${prefix}${key}`, problems);
  }
  for (const key of Object.keys(params)) {
    if (!(key in spec)) problems.push({ path: `${prefix}${key}`, message: `unknown parameter (known: ${Object.keys(spec).join(', ')})` });
  }
}

/** A validator for `CheckDefinition.validate` from the check's parameter rules (plus `failOnError`). */
export function paramValidator(spec: ParamSpec, extra?: (p: Readonly<Record<string, unknown>>) => FieldProblem[]) {
  const all: ParamSpec = { ...COMMON, ...spec };
  return (params: Readonly<Record<string, unknown>>): FieldProblem[] => {
    const problems: FieldProblem[] = [];
    specProblems(all, params, '', problems);
    if (problems.length === 0 && extra) problems.push(...extra(params));
    return problems;
  };
}

export const OPERATORS = ['all', 'any', 'none'] as const;
export type Operator = (typeof OPERATORS)[number];

/** Whether `hits` of `total` items satisfy an all/any/none operator. */
export function operatorHolds(operator: Operator, hits: number, total: number): boolean {
  if (operator === 'all') return hits === total;
  if (operator === 'any') return hits > 0;
  return hits === 0;
}

export const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback);
export const num = (v: unknown, fallback: number): number => (typeof v === 'number' ? v : fallback);
export const strings = (v: unknown): string[] => (isStringArray(v) ? v : []);
