/**
 * Shared pieces for validating gateway request bodies with zod: the gateway's wording for zod
 * issues, the conversion of issues into FieldProblems, and number builders the OpenAI-style
 * endpoints have in common. Schemas are built once at module load; nothing here runs per request
 * unless a body is invalid.
 */
import * as z from 'zod/mini';
import { ValidationError, type FieldProblem } from '../../http/errors.ts';
import { isRecord } from '../../http/json.ts';

type RawIssue = z.core.$ZodRawIssue;
type Issue = z.core.$ZodIssue;

const TYPE_NAMES: Readonly<Record<string, string>> = {
  number: 'a number',
  int: 'an integer',
  string: 'a string',
  boolean: 'a boolean',
  array: 'an array',
  object: 'an object',
  record: 'an object',
  null: 'null',
};

const plural = (n: number | bigint, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The gateway's wording for every zod issue a schema does not word itself. */
export function issueMessage(iss: RawIssue): string {
  switch (iss.code) {
    case 'invalid_type':
      // An absent key reaches the schema as undefined; JSON has no other way to produce it.
      return iss.input === undefined ? 'is required' : `must be ${TYPE_NAMES[iss.expected] ?? iss.expected}`;
    case 'too_small':
      if (iss.origin === 'array' || iss.origin === 'set') return `must have at least ${plural(iss.minimum, 'item')}`;
      if (iss.origin === 'string') return iss.minimum === 1 ? 'must not be empty' : `must be at least ${plural(iss.minimum, 'character')}`;
      return iss.inclusive === false ? `must be greater than ${iss.minimum}` : `must be at least ${iss.minimum}`;
    case 'too_big':
      if (iss.origin === 'array' || iss.origin === 'set') return `must have at most ${plural(iss.maximum, 'item')}`;
      if (iss.origin === 'string') return `must be at most ${plural(iss.maximum, 'character')}`;
      return iss.inclusive === false ? `must be less than ${iss.maximum}` : `must be at most ${iss.maximum}`;
    case 'invalid_value':
      return iss.values.length === 1 ? `must be ${String(iss.values[0])}` : `must be one of ${iss.values.join(', ')}`;
    case 'invalid_union':
      if (iss.discriminator !== undefined) {
        // zod reports a bad discriminator on the discriminator's own path.
        const tag = isRecord(iss.input) ? iss.input[iss.discriminator] : undefined;
        const options: unknown = iss.options;
        return tag === undefined || !Array.isArray(options) ? 'is required' : `must be one of ${options.join(', ')}`;
      }
      return iss.input === undefined ? 'is required' : 'does not match any allowed form';
    case 'invalid_format':
      return iss.format === 'regex' ? 'has an invalid format' : `must be a valid ${iss.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${iss.divisor}`;
    case 'unrecognized_keys':
      return `has unknown ${iss.keys.length === 1 ? 'field' : 'fields'} ${iss.keys.join(', ')}`;
    case 'invalid_key':
      return 'is not an allowed key';
    default:
      return 'is invalid';
  }
}

/** Parse context that applies the gateway's wording. One shared object: zod copies it per parse. */
export const PARSE_CONTEXT: z.core.ParseContext<Issue> = { error: issueMessage };

/**
 * Schema-level message for a wrong type only. A schema's own `error` outranks PARSE_CONTEXT for
 * every issue it owns (its checks' too), so it must stay silent for the rest, missing values included.
 */
export function typeMessage(message: string): (iss: RawIssue) => string | undefined {
  return (iss) =>
    (iss.code === 'invalid_type' || (iss.code === 'invalid_union' && iss.discriminator === undefined)) && iss.input !== undefined ? message : undefined;
}

const SIMPLE_KEY = /^[A-Za-z0-9_$-]+$/;

/** `['messages', 0, 'role']` -> `messages[0].role`; keys that would read ambiguously are quoted. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else {
      const name = String(key);
      if (SIMPLE_KEY.test(name)) out += out === '' ? name : `.${name}`;
      else out += `[${JSON.stringify(name)}]`;
    }
  }
  return out;
}

/** A union branch rejected the value's shape outright, as opposed to a problem inside it. */
const rejectsShape = (iss: Issue): boolean =>
  iss.path.length === 0 && (iss.code === 'invalid_type' || iss.code === 'invalid_value' || iss.code === 'invalid_union');

interface Located {
  path: PropertyKey[];
  message: string;
}

/**
 * A failed union carries every branch's issues. When exactly one branch accepted the value's shape
 * (a string union member saw an array, say), its inner issues are the useful ones; otherwise the
 * union's own message stands.
 */
function flatten(issues: readonly Issue[], base: readonly PropertyKey[], out: Located[]): void {
  for (const iss of issues) {
    const path = base.length === 0 ? iss.path : [...base, ...iss.path];
    if (iss.code === 'invalid_union' && iss.discriminator === undefined && iss.errors.length > 0) {
      let match: Issue[] | undefined;
      let matches = 0;
      for (const branch of iss.errors) {
        if (branch.length > 0 && !branch.some(rejectsShape)) {
          match = branch;
          matches++;
        }
      }
      if (matches === 1 && match) {
        flatten(match, path, out);
        continue;
      }
    }
    out.push({ path, message: iss.message });
  }
}

// Absent fields sort after present ones: a wrong `type` explains more than the fields it then lacks.
const ABSENT = Number.MAX_SAFE_INTEGER;

/** Where a path sits in the body: key order for objects, index for arrays. */
function positions(input: unknown, path: readonly PropertyKey[]): number[] {
  const out: number[] = [];
  let node = input;
  for (const key of path) {
    if (Array.isArray(node) && typeof key === 'number') {
      out.push(key);
      node = node[key];
    } else if (isRecord(node)) {
      const name = String(key);
      const index = Object.keys(node).indexOf(name);
      out.push(index < 0 ? ABSENT : index);
      node = index < 0 ? undefined : node[name];
    } else {
      out.push(ABSENT);
      node = undefined;
    }
  }
  return out;
}

function comparePositions(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/**
 * zod issues -> FieldProblems in bracket path form. Given the parsed `input`, they are ordered by
 * where they sit in it (the first one becomes OpenAI's `param`), missing fields after present
 * ones at their level; without it they keep zod's (schema) order.
 */
export function problemsFromZod(issues: readonly Issue[], input?: unknown): FieldProblem[] {
  const located: Located[] = [];
  flatten(issues, [], located);
  if (input === undefined) return located.map((p) => ({ path: formatPath(p.path), message: p.message }));
  const keyed = located.map((p) => ({ at: positions(input, p.path), problem: { path: formatPath(p.path), message: p.message } }));
  keyed.sort((a, b) => comparePositions(a.at, b.at));
  return keyed.map((k) => k.problem);
}

/** Parses a request body that must be a JSON object, throwing ValidationError with every problem. */
export function parseRequestBody<S extends z.ZodMiniType>(schema: S, body: unknown): z.output<S> {
  if (!isRecord(body)) throw ValidationError.field('', 'request body must be a JSON object');
  const result = schema.safeParse(body, PARSE_CONTEXT);
  if (result.success) return result.data;
  throw new ValidationError(problemsFromZod(result.error.issues, body));
}

/** A JSON number in [min, max]; both bounds share one message so either side reads the same. */
export function numberBetween(min: number, max: number) {
  const range = `must be between ${min} and ${max}`;
  return z.number().check(z.gte(min, { error: range }), z.lte(max, { error: range }));
}

/**
 * An integral JSON number, optionally bounded. Not z.int(): that caps at 2^53, and int64 fields
 * such as `seed` can legitimately exceed it. One check rather than refine + min/max so a value
 * gets a single problem, and without `abort`, which would also silence the enclosing object's
 * cross-field refinements.
 */
function boundedInteger(min: number, max: number, rangeMessage: string) {
  return z.number({ error: typeMessage('must be an integer') }).check((payload) => {
    const value = payload.value;
    if (!Number.isInteger(value)) payload.issues.push({ code: 'custom', message: 'must be an integer', input: value });
    else if (value < min || value > max) payload.issues.push({ code: 'custom', message: rangeMessage, input: value });
  });
}

export function integer() {
  return boundedInteger(-Infinity, Infinity, 'is out of range');
}

export function integerBetween(min: number, max: number) {
  return boundedInteger(min, max, `must be between ${min} and ${max}`);
}

export function integerAtLeast(min: number) {
  return boundedInteger(min, Infinity, `must be at least ${min}`);
}

/** A string with at least one character. */
export function nonEmptyString() {
  return z.string().check(z.minLength(1, { error: 'must not be empty' }));
}

/** `stop`: one sequence or up to 4 (docs/design/spec.md#request-limits). */
export const stopSequences = z.union(
  [z.string(), z.array(z.string()).check(z.minLength(1, { error: 'must have at least 1 sequence' }), z.maxLength(4, { error: 'must be at most 4 sequences' }))],
  { error: typeMessage('must be a string or an array of at most 4 strings') },
);

/** `logit_bias`: token ids (integer strings) to a bias in -100..100. */
export const logitBias = z.record(z.string().check(z.regex(/^\d+$/)), numberBetween(-100, 100), {
  error: (iss) => (iss.code === 'invalid_key' ? 'is not a token id (keys must be integer strings)' : undefined),
});

export const streamOptions = z.looseObject({ include_usage: z.optional(z.boolean()) });

/** OpenAI-style `metadata`: at most 16 string pairs, keys up to 64 and values up to 512 characters. */
export const metadata = z.record(z.string(), z.string().check(z.maxLength(512, { error: 'must be at most 512 characters' }))).check((payload) => {
  const keys = Object.keys(payload.value);
  if (keys.length > 16) {
    payload.issues.push({ code: 'custom', message: 'must have at most 16 key-value pairs', input: payload.value });
  }
  for (const key of keys) {
    if (key.length > 64) payload.issues.push({ code: 'custom', path: [key], message: 'key must be at most 64 characters', input: key });
  }
});

/** Adds the "only with stream: true" rule for `stream_options` to a cross-field check. */
export function checkStreamOptions(req: Record<string, unknown>, ctx: z.core.$RefinementCtx): void {
  if (isRecord(req.stream_options) && req.stream !== true) {
    ctx.addIssue({ code: 'custom', path: ['stream_options'], message: 'is only allowed when stream is true' });
  }
}
