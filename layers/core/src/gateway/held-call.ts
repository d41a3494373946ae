/**
 * A `/v1` request the gateway answers itself (held files, batches it runs): authenticated like
 * every gateway route (completions.write), answered and refused in OpenAI's shape with a trace id.
 * An answer the pipeline gave (the request went to a provider) keeps its own trace id.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../deps.ts';
import { toResponse } from '../http/error-response.ts';
import { asGantryError } from '../http/errors.ts';
import { requireGatewayAccess, type GatewayPrincipal } from './access.ts';

export async function heldCall(deps: CoreDeps, headers: Headers, what: string, run: (principal: GatewayPrincipal) => Promise<Response>): Promise<Response> {
  const out = { 'x-gw-trace-id': headers.get('x-gw-trace-id') || randomUUID() };
  try {
    const principal = await deps.keyAuth.authenticateRequest(headers, 'gateway');
    requireGatewayAccess(principal);
    const res = await run(principal);
    if (!res.headers.has('x-gw-trace-id')) res.headers.set('x-gw-trace-id', out['x-gw-trace-id']);
    return res;
  } catch (err) {
    const e = asGantryError(err);
    if (e.status >= 500) deps.logger.error(`${what} request failed`, { traceId: out['x-gw-trace-id'], error: err });
    return toResponse(e, 'gateway', out);
  }
}
