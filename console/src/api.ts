/**
 * The console's only way to the server: the public admin API with the session cookie. The CSRF
 * token lives in this module's memory only (never in browser storage); after a reload it is read
 * again from GET /v1/console/session.
 */

import type { GetAnswers } from './api-types.ts';

export interface Problem {
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly problems: Problem[];
  constructor(status: number, message: string, problems: Problem[]) {
    super(message);
    this.status = status;
    this.problems = problems;
  }
}

export type Json = Record<string, unknown>;

/** A path the API answers GET on, as its OpenAPI template (`/v1/prompts/{promptId}`). */
export type GetPath = keyof GetAnswers;

/** What a GET of this path template answers (generated from the OpenAPI document). */
export type AnswerOf<P extends GetPath> = GetAnswers[P];

/** The row type of a list path's `data`. */
export type ItemOf<P extends GetPath> = GetAnswers[P] extends { data: (infer I)[] } ? I : never;

/** The list paths: those whose answer has `data`. */
export type ListPath = { [P in GetPath]: GetAnswers[P] extends { data: unknown[] } ? P : never }[GetPath];

type ParamNames<P extends string> = P extends `${string}{${infer K}}${infer Rest}` ? K | ParamNames<Rest> : never;

/** The values of a template's `{param}` segments. */
export type PathParams<P extends string> = Record<ParamNames<P>, string>;

/** A path template with its parameters filled in (each one URL-encoded). */
export function fill<P extends string>(template: P, params: PathParams<P>): string {
  const values = params as Record<string, string>;
  return template.replace(/\{([^}]+)\}/g, (_, k: string) => encodeURIComponent(values[k] ?? ''));
}

/** A typed GET: the answer is what the OpenAPI document says this path template answers. */
export function get<P extends GetPath>(template: P, params: PathParams<P>, q = ''): Promise<AnswerOf<P>> {
  return api<AnswerOf<P>>('GET', fill(template, params) + q);
}

export interface ListBody<T = Json> {
  object: 'list';
  total: number | null;
  data: T[];
  has_more?: boolean;
  next_cursor?: string | null;
}

export const SESSION_PATH = '/v1/console/session';
export const SESSION_ENDED = 'gantry:session-ended';
/** A change went through: names of referenced items the console remembers may be stale. */
export const CHANGED = 'gantry:changed';

let csrfToken: string | null = null;

export function setCsrf(token: string | null): void {
  csrfToken = token;
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function problemsOf(body: unknown): Problem[] {
  if (!body || typeof body !== 'object') return [];
  const errors = (body as { errors?: unknown }).errors;
  if (!Array.isArray(errors)) return [];
  return errors.filter((e): e is Problem => !!e && typeof e === 'object' && typeof (e as Problem).path === 'string');
}

function messageOf(body: unknown, status: number): string {
  if (body && typeof body === 'object') {
    const b = body as { message?: unknown; error?: { message?: unknown } };
    if (typeof b.message === 'string') return b.message;
    if (typeof b.error?.message === 'string') return b.error.message;
  }
  return `The server answered ${status}`;
}

export async function api<T = Json>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (UNSAFE.has(method) && csrfToken) headers['x-gw-csrf'] = csrfToken;
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  // A session that ended (expired, signed out elsewhere, key revoked) sends the app back to sign-in.
  if (res.status === 401 && path !== SESSION_PATH) dispatchEvent(new Event(SESSION_ENDED));
  if (!res.ok) throw new ApiError(res.status, messageOf(parsed, res.status), problemsOf(parsed));
  if (method !== 'GET') dispatchEvent(new Event(CHANGED));
  return parsed as T;
}

/** A query string from the set values only. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Problems that name this field or one inside it (`scopes` covers `scopes[1]` and `scopes.x`). */
export function problemsFor(problems: readonly Problem[], field: string): Problem[] {
  return problems.filter((p) => p.path === field || p.path.startsWith(`${field}.`) || p.path.startsWith(`${field}[`));
}
