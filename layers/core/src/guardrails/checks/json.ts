/**
 * Checks on JSON in the text: `default.jsonSchema` validates it against a JSON Schema (drafts 4 to
 * 2020-12, with @cfworker/json-schema: small, no dependencies, no code generation), and
 * `default.jsonKeys` looks for top-level keys. The JSON is the whole text, else a ```json block,
 * else the outermost {...}: models often wrap JSON in prose.
 */
import { Validator, type Schema } from '@cfworker/json-schema';
import type { CheckDefinition } from '../../kernel/guardrails.ts';
import { isRecord, OPERATORS, operatorHolds, paramValidator, strings, type Operator } from './params.ts';
import { checkedText } from './text-of.ts';

const EVENTS = ['beforeRequestHook', 'afterRequestHook'] as const;

function tryJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/** The JSON values the text holds, most likely first. */
export function jsonCandidates(text: string): unknown[] {
  const out: unknown[] = [];
  const whole = tryJson(text.trim());
  if (whole.ok) return [whole.value];
  for (const m of text.matchAll(/```(?:json)?\s*\n([\s\S]*?)```/gi)) {
    const block = tryJson(m[1] ?? '');
    if (block.ok) out.push(block.value);
  }
  const first = text.indexOf('{');
  const last = text.lastIndexOf('}');
  if (first !== -1 && last > first) {
    const braces = tryJson(text.slice(first, last + 1));
    if (braces.ok) out.push(braces.value);
  }
  return out;
}

const validators = new WeakMap<object, Validator>();

function validatorFor(schema: Record<string, unknown>): Validator {
  let v = validators.get(schema);
  if (!v) {
    v = new Validator(schema as Schema, '2020-12', false);
    validators.set(schema, v);
  }
  return v;
}

/** A schema the validator cannot use (a dangling $ref ...), found by validating a value with it. */
function schemaProblem(schema: unknown): string | null {
  if (!isRecord(schema)) return 'must be an object (a JSON Schema)';
  try {
    new Validator(schema as Schema, '2020-12', false).validate(null);
    return null;
  } catch (err) {
    return `is not a usable JSON Schema (${err instanceof Error ? err.message : String(err)})`;
  }
}

export const jsonSchema: CheckDefinition = {
  id: 'default.jsonSchema',
  events: EVENTS,
  validate: paramValidator({ schema: { type: 'any' }, not: { type: 'boolean' } }, (p) => {
    const why = p.schema === undefined ? 'is required' : schemaProblem(p.schema);
    return why ? [{ path: 'schema', message: why }] : [];
  }),
  async run(ctx, p) {
    const validator = validatorFor(p.schema as Record<string, unknown>);
    const candidates = jsonCandidates(checkedText(ctx));
    let errors: { path: string; message: string }[] = [];
    let matched = false;
    for (const value of candidates) {
      const result = validator.validate(value);
      if (result.valid) {
        matched = true;
        break;
      }
      if (errors.length === 0) errors = result.errors.slice(0, 10).map((e) => ({ path: e.instanceLocation, message: e.error }));
    }
    const verdict = p.not === true ? !matched : matched;
    return { verdict, data: { found_json: candidates.length > 0, valid: matched, errors: matched ? [] : errors } };
  },
};

export const jsonKeys: CheckDefinition = {
  id: 'default.jsonKeys',
  events: EVENTS,
  validate: paramValidator({ keys: { type: 'strings', required: true, nonEmpty: true }, operator: { type: 'enum', values: OPERATORS } }),
  async run(ctx, p) {
    const keys = strings(p.keys);
    const operator = (p.operator ?? 'any') as Operator;
    const objects = jsonCandidates(checkedText(ctx)).filter(isRecord);
    // The first object that satisfies the operator wins; none found fails (even for `none`).
    for (const obj of objects) {
      const present = keys.filter((k) => k in obj);
      if (operatorHolds(operator, present.length, keys.length)) return { verdict: true, data: { operator, present } };
    }
    return { verdict: false, data: { operator, found_json: objects.length > 0 } };
  },
};
