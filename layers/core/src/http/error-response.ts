/**
 * Errors as responses: the one place a thrown error becomes a Response. Apart from errors.ts, which
 * http/bodies.ts imports, so that the error hierarchy does not import the response helpers.
 */
import { asGantryError, toAdminBody, toOpenAIBody, type GantryError } from './errors.ts';
import { jsonResponse } from './json.ts';

/**
 * Who reads an error: gateway clients (OpenAI's shape), admin clients (the admin shape), or the
 * clients of a gateway dialect (its own shape, e.g. Anthropic's).
 */
export type ErrorSurface = 'gateway' | 'admin' | { refusalBody(e: GantryError): unknown };

function bodyFor(e: GantryError, surface: ErrorSurface): unknown {
  if (surface === 'admin') return toAdminBody(e);
  return surface === 'gateway' ? toOpenAIBody(e) : surface.refusalBody(e);
}

/**
 * The response for anything thrown, in the shape of its surface, with the error's own headers
 * (e.g. `retry-after`) and then `headers` (e.g. trace ids) on top.
 */
export function toResponse(err: unknown, surface: ErrorSurface, headers?: Readonly<Record<string, string>>): Response {
  const e = asGantryError(err);
  return jsonResponse(bodyFor(e, surface), e.status, { ...e.headers, ...headers });
}
