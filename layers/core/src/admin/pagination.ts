/** The one list convention: `current_page` (0-based) and `page_size`; `{object: 'list', total, data}`. */
import * as z from 'zod';
import { parseWith } from './route.ts';

export const MAX_PAGE_SIZE = 100;

const pagingSchema = (max: number) =>
  z.object({
    current_page: z.coerce.number({ error: 'must be an integer' }).int('must be an integer').min(0, 'must be >= 0').default(0),
    page_size: z.coerce
      .number({ error: 'must be an integer' })
      .int('must be an integer')
      .min(1, 'must be >= 1')
      .max(max, `must be <= ${max}`)
      .default(50),
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
