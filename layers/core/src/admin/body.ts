/**
 * Admin request bodies: every create and update declares its schema on the route (`withBody`), so
 * one place refuses unknown fields (a typo such as `expire_at` would otherwise be dropped silently
 * and the resource made without it) and the OpenAPI document shows the schema that validates.
 */
import type * as z from 'zod';
import { ValidationError, type FieldProblem } from '../http/errors.ts';
import { suggestion } from '../http/suggest.ts';
import { formatPath } from '../gateway/validate/common.ts';
import { isRecord } from '../http/json.ts';
import { parseWith, type AdminContext, type AdminRoute } from './route.ts';

type Schema = z.core.$ZodType;

/** The parts of zod's definitions the walk reads (zod 4 keeps them on `_zod.def`). */
interface Def {
  type: string;
  shape?: Record<string, Schema>;
  catchall?: Schema;
  innerType?: Schema;
  in?: Schema;
  out?: Schema;
  options?: readonly Schema[];
  element?: Schema;
}

const defOf = (s: Schema): Def => s._zod.def as unknown as Def;

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

/** The schema that judges the value's shape, wrappers and transforms taken off. */
function unwrap(schema: Schema): Schema {
  let s = schema;
  for (let i = 0; i < 16; i++) {
    const def = defOf(s);
    if (WRAPPERS.has(def.type) && def.innerType) s = def.innerType;
    else if (def.type === 'pipe' && def.in && def.out) s = defOf(def.in).type === 'transform' ? def.out : def.in;
    else break;
  }
  return s;
}

/** The fields an object schema knows, or null when it takes any (a catchall other than never). */
function knownFields(schema: Schema): string[] | null {
  const def = defOf(unwrap(schema));
  if (def.type === 'object') {
    if (def.catchall && defOf(def.catchall).type !== 'never') return null;
    return Object.keys(def.shape ?? {});
  }
  if (def.type === 'union' && def.options) {
    const all: string[] = [];
    for (const option of def.options) {
      const known = knownFields(option);
      if (known === null) return null;
      all.push(...known);
    }
    return [...new Set(all)];
  }
  return null;
}

function unknownMessage(key: string, known: readonly string[]): string {
  const hint = suggestion(key, known);
  if (hint !== undefined) return `unknown field ${key}; did you mean ${hint}?`;
  return `unknown field ${key}; known fields: ${known.join(', ')}`;
}

function walk(schema: Schema, value: unknown, path: PropertyKey[], out: FieldProblem[]): void {
  const s = unwrap(schema);
  const def = defOf(s);
  if (def.type === 'array' && def.element && Array.isArray(value)) {
    value.forEach((item, i) => walk(def.element as Schema, item, [...path, i], out));
    return;
  }
  if (!isRecord(value)) return;
  const known = knownFields(s);
  if (known === null) return;
  // Named on the object that holds them, as zod's strict objects do: the field itself is not in the schema.
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) out.push({ path: formatPath(path), message: unknownMessage(key, known) });
  }
  // Only plain objects say which schema a nested value has; a union's branch is zod's to choose.
  if (def.type !== 'object') return;
  for (const [key, field] of Object.entries(def.shape ?? {})) {
    if (value[key] !== undefined) walk(field, value[key], [...path, key], out);
  }
}

/** Fields of `value` (at any depth the schema describes) that the schema does not know. */
export function unknownFieldProblems(schema: Schema, value: unknown): FieldProblem[] {
  const out: FieldProblem[] = [];
  walk(schema, value, [], out);
  return out;
}

/** Validates an admin body: unknown fields first (a typo explains the rest), then the schema. */
export function parseBody<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const unknown = unknownFieldProblems(schema, value);
  if (unknown.length) throw new ValidationError(unknown);
  return parseWith(schema, value);
}

/** A route's body schema and its handler, which gets the validated body. */
export function withBody<S extends z.ZodType>(
  schema: S,
  handler: (ctx: AdminContext, body: z.output<S>) => Promise<unknown>,
): Pick<AdminRoute, 'body' | 'handler'> {
  return { body: schema, handler: async (ctx) => handler(ctx, parseBody(schema, await ctx.body())) };
}
