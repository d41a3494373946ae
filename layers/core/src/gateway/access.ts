/** Which principals may call the gateway. */
import { ForbiddenError } from '../http/errors.ts';
import type { Principal } from '../policy/principal.ts';

export function requireGatewayAccess(p: Principal): asserts p is Principal & { workspaceId: string } {
  if (p.workspaceId === null) {
    throw new ForbiddenError('Organisation keys cannot call the gateway: use a workspace API key');
  }
  if (!p.scopes.has('completions.write')) {
    throw new ForbiddenError('This API key lacks the scope completions.write');
  }
}
