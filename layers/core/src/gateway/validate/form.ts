/**
 * Rules for multipart/form-data bodies (audio, image edits, file uploads). Form fields are text,
 * so numbers and booleans are checked as their text forms; files are checked for presence only.
 * Every problem names its field, as JSON validation does.
 */
import { ValidationError, type FieldProblem } from '../../http/errors.ts';
import type { FormSummary } from '../endpoint.ts';

export interface FieldRule {
  required?: boolean;
  oneOf?: readonly string[];
  /** The text must be a number in [min, max] (an integer when `integer`). */
  number?: { min: number; max: number; integer?: boolean };
  boolean?: boolean;
}

export interface FormRules {
  /** Files by field name; `alsoAs` lists other names the same file may be sent under (`image[]`). */
  files?: Readonly<Record<string, { required?: boolean; alsoAs?: readonly string[] }>>;
  fields?: Readonly<Record<string, FieldRule>>;
}

function checkText(name: string, value: string, rule: FieldRule, problems: FieldProblem[]): void {
  if (rule.oneOf && !rule.oneOf.includes(value)) {
    problems.push({ path: name, message: `must be one of ${rule.oneOf.join(', ')}` });
  } else if (rule.number) {
    const { min, max, integer } = rule.number;
    const n = value.trim() === '' ? NaN : Number(value);
    if (!Number.isFinite(n) || (integer && !Number.isInteger(n))) problems.push({ path: name, message: `must be ${integer ? 'an integer' : 'a number'}` });
    else if (n < min || n > max) problems.push({ path: name, message: max === Infinity ? `must be at least ${min}` : `must be between ${min} and ${max}` });
  } else if (rule.boolean && value !== 'true' && value !== 'false') {
    problems.push({ path: name, message: 'must be true or false' });
  } else if (rule.required && value === '') {
    problems.push({ path: name, message: 'must not be empty' });
  }
}

/** Throws a ValidationError naming every field that breaks its rule, in rule order. */
export function checkForm(form: FormSummary, rules: FormRules): void {
  const problems: FieldProblem[] = [];
  for (const [name, rule] of Object.entries(rules.files ?? {})) {
    const names = [name, ...(rule.alsoAs ?? [])];
    const sent = names.some((n) => (form.files[n]?.length ?? 0) > 0);
    if (!sent) {
      if (names.some((n) => form.fields[n] !== undefined)) problems.push({ path: name, message: 'must be a file' });
      else if (rule.required) problems.push({ path: name, message: 'is required' });
    }
  }
  for (const [name, rule] of Object.entries(rules.fields ?? {})) {
    const value = form.fields[name];
    if (value === undefined) {
      if (form.files[name]) problems.push({ path: name, message: 'must be a text field, not a file' });
      else if (rule.required) problems.push({ path: name, message: 'is required' });
      continue;
    }
    checkText(name, value, rule, problems);
  }
  if (problems.length) throw new ValidationError(problems);
}
