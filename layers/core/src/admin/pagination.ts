/** The one list convention: `current_page` (0-based) and `page_size`; `{object: 'list', total, data}`. */
import * as z from 'zod';
import { ValidationError } from '../http/errors.ts';
import { parseWith } from './route.ts';

export const MAX_PAGE_SIZE = 100;

const pagingSchema = (max: number) =>
  z.object({
    current_page: z.coerce.number({ error: 'must be an integer' }).int('must be an integer').min(0, 'must be >= 0').default(0),
    page_size: z.coerce.number({ error: 'must be an integer' }).int('must be an integer').min(1, 'must be >= 1').max(max, `must be <= ${max}`).default(50),
  });
const schemas = new Map<number, ReturnType<typeof pagingSchema>>();

export interface Paging {
  current_page: number;
  page_size: number;
}

/** `maxPageSize` for the few lists whose reference allows more (MCP connections: 500). */
export function parsePaging(query: URLSearchParams, maxPageSize = MAX_PAGE_SIZE): Paging {
  let schema = schemas.get(maxPageSize);
  if (!schema) schemas.set(maxPageSize, (schema = pagingSchema(maxPageSize)));
  return parseWith(schema, {
    current_page: query.get('current_page') ?? undefined,
    page_size: query.get('page_size') ?? undefined,
  });
}

export interface ListBody<T> {
  object: 'list';
  total: number;
  data: T[];
}

export function page<T>(items: readonly T[], paging: Paging): ListBody<T> {
  const start = paging.current_page * paging.page_size;
  return { object: 'list', total: items.length, data: items.slice(start, start + paging.page_size) };
}

/**
 * Cursor paging, for lists that grow without bound (a million API keys): `?cursor=` (empty for the
 * first page) and `page_size`; the answer adds `has_more` and `next_cursor`, and `total` is null,
 * since counting would read every item on every request.
 */
export interface CursorListBody<T> {
  object: 'list';
  total: null;
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** Whether a list request asks for cursor paging (it names `cursor`, even empty). */
export const wantsCursor = (query: URLSearchParams): boolean => query.has('cursor');

export function encodeCursor(position: Record<string, string>): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

/** The position a cursor of this API encodes: its fields are strings of at most 256 characters. */
export function decodeCursor<K extends string>(raw: string | null, fields: readonly K[]): Record<K, string> | undefined {
  if (!raw) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const ok =
    typeof parsed === 'object' &&
    parsed !== null &&
    fields.every((f) => typeof (parsed as Record<string, unknown>)[f] === 'string' && ((parsed as Record<string, string>)[f] ?? '').length <= 256);
  if (!ok) throw ValidationError.field('cursor', 'is not a cursor this API returned');
  return parsed as Record<K, string>;
}

export function cursorPage<T>(data: T[], next: string | undefined): CursorListBody<T> {
  return { object: 'list', total: null, data, has_more: next !== undefined, next_cursor: next ?? null };
}
