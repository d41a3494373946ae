/** Which principals may call the gateway. */
import { ForbiddenError } from '../http/errors.ts';
import type { Principal } from '../kernel/principal.ts';

/** A principal that may call the gateway: a workspace key (or JWT) with completions.write. */
export type GatewayPrincipal = Principal & { workspaceId: string };

export function requireGatewayAccess(p: Principal): asserts p is GatewayPrincipal {
  if (p.workspaceId === null) {
    throw new ForbiddenError('Organisation keys cannot call the gateway: use a workspace API key');
  }
  if (!p.scopes.has('completions.write')) {
    throw new ForbiddenError('This API key lacks the scope completions.write');
  }
}
