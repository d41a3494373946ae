/**
 * Errors as responses: the one place a thrown error becomes a Response. Apart from errors.ts, which
 * http/bodies.ts imports, so that the error hierarchy does not import the response helpers.
 */
import { asGantryError, toAdminBody, toOpenAIBody } from './errors.ts';
import { jsonResponse } from './json.ts';

/** Who reads an error: gateway clients (OpenAI's shape) or admin clients (the admin shape). */
export type ErrorSurface = 'gateway' | 'admin';

/**
 * The response for anything thrown, in the shape of its surface, with the error's own headers
 * (e.g. `retry-after`) and then `headers` (e.g. trace ids) on top.
 */
export function toResponse(err: unknown, surface: ErrorSurface, headers?: Readonly<Record<string, string>>): Response {
  const e = asGantryError(err);
  return jsonResponse(surface === 'admin' ? toAdminBody(e) : toOpenAIBody(e), e.status, { ...e.headers, ...headers });
}
