/**
 * Local stand-in for API Gateway's `@connections`: `ws` sockets registered under a connection id
 * (a local front door that hands the relay connection ids, as API Gateway does). The same limit
 * applies as in AWS, so a relay tested locally meets the 128 KB message limit it meets there.
 */
import type WebSocket from 'ws';
import type { ClientConnections, SendResult } from '../connections.ts';

/** API Gateway's WebSocket message limit. */
export const API_GATEWAY_MESSAGE_BYTES = 128 * 1024;

export class WebSocketConnections implements ClientConnections {
  readonly #sockets = new Map<string, WebSocket>();
  readonly #maxBytes: number;

  constructor(maxBytes = API_GATEWAY_MESSAGE_BYTES) {
    this.#maxBytes = maxBytes;
  }

  register(connectionId: string, ws: WebSocket): void {
    this.#sockets.set(connectionId, ws);
    ws.once('close', () => this.#sockets.delete(connectionId));
  }

  send(connectionId: string, data: Uint8Array, binary: boolean): Promise<SendResult> {
    const ws = this.#sockets.get(connectionId);
    if (!ws || ws.readyState !== ws.OPEN) return Promise.resolve('gone');
    if (data.byteLength > this.#maxBytes) return Promise.resolve('too_large');
    return new Promise((resolve) => ws.send(data, { binary }, (err) => resolve(err ? 'gone' : 'sent')));
  }

  async close(connectionId: string): Promise<void> {
    this.#sockets.get(connectionId)?.close(1000);
  }
}
