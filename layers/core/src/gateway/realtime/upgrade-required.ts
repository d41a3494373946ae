/**
 * `/v1/realtime` without a WebSocket upgrade. Upgrades are taken before the app (the local
 * server's upgrade listener, API Gateway's WebSocket API), so what reaches the app is a plain
 * request: 426, naming what the client must do. Kept apart from the relay, so the gateway bundle
 * never loads `ws`.
 */
import { toResponse } from '../../http/error-response.ts';
import { GantryError } from '../../http/errors.ts';

export function upgradeRequired(): Response {
  const e = new GantryError(426, 'AB01', 'invalid_request_error', 'The realtime endpoint is a WebSocket: connect with an Upgrade: websocket request', {
    openaiCode: 'upgrade_required',
    headers: { upgrade: 'websocket' },
  });
  return toResponse(e, 'gateway');
}
