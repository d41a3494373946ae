/**
 * What every answer schema is built from. An answer's schema is tied to the TypeScript type of what
 * the route answers (a service's view or return type): `answerOf<T>()(schema)` does not compile
 * unless every value of `T` fits the schema and both name the same fields, so a renamed or added
 * field fails the type check instead of drifting from the document. The OpenAPI document renders
 * these schemas (openapi/document.ts), and a test validates real answers against it.
 */
import * as z from 'zod';
import type { KeyUsageLimits } from '../../store/entities.ts';

/** Keys of `T` (of every member of a union). */
type KeysOf<T> = T extends unknown ? keyof T : never;

/** Whether every `T` fits `Out` and both have the same top-level keys. */
type Fits<T, Out> = [T] extends [Out] ? ([KeysOf<T>] extends [KeysOf<Out>] ? ([KeysOf<Out>] extends [KeysOf<T>] ? true : false) : false) : false;

/** The schema of an answer of type `T`; a schema that does not fit `T` is a type error naming both. */
export const answerOf =
  <T>() =>
  <S extends z.ZodType>(schema: S, ..._mismatch: Fits<T, z.output<S>> extends true ? [] : [{ schemaOutput: z.output<S>; answerType: T }]): S =>
    schema;

/** `T` without index signatures, at any depth (an open schema's output has them; an interface has none). */
type Named<T> = T extends readonly (infer I)[]
  ? Named<I>[]
  : T extends object
    ? { [K in keyof T as string extends K ? never : number extends K ? never : K]: Named<T[K]> }
    : T;

/**
 * The schema of an open answer (one that may carry more fields than it names, as a log row): every
 * `T` fits it, and what it names has the type `T` gives it.
 */
export const openAnswerOf =
  <T>() =>
  <S extends z.ZodType>(schema: S, ..._mismatch: [T] extends [Named<z.output<S>>] ? [] : [{ schemaOutput: Named<z.output<S>>; answerType: T }]): S =>
    schema;

export const isoTime = z.string().describe('ISO 8601 time');
export const nullableString = z.string().nullable();

/** A key's or a provider's usage limit (store/entities.ts `KeyUsageLimits`). */
export const keyUsageLimits = answerOf<KeyUsageLimits>()(
  z.object({
    type: z.enum(['cost', 'tokens']).optional(),
    credit_limit: z.number().nullable().optional(),
    alert_threshold: z.number().nullable().optional(),
    periodic_reset: z.enum(['weekly', 'monthly']).nullable().optional(),
    periodic_reset_days: z.number().nullable().optional(),
    next_usage_reset_at: nullableString.optional(),
  }),
);

/** `{}`: what updates and deletes answer. */
export const emptyAnswer = z.strictObject({});

/** `{success: true}`. */
export const successAnswer = answerOf<{ success: boolean }>()(z.object({ success: z.boolean() }));

/** A page of the one list convention (admin/pagination.ts). */
export const listOf = <I extends z.ZodType>(item: I) => z.object({ object: z.literal('list'), total: z.number().int(), data: z.array(item) });

/** A page of a cursor list: `total` is null, `has_more` and `next_cursor` lead on. */
export const cursorListOf = <I extends z.ZodType>(item: I) =>
  z.object({ object: z.literal('list'), total: z.null(), data: z.array(item), has_more: z.boolean(), next_cursor: z.string().nullable() });

/** One route's documented success: its status, what it answers, and (optionally) a description. */
export interface Answer {
  status?: number;
  schema: z.ZodType;
  description?: string;
  /** A body that is not JSON (a file's bytes). */
  contentType?: string;
  /** Server-sent events too, when the body says `stream: true`. */
  stream?: boolean;
}
