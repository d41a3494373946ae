/**
 * Messages to WebSocket clients held by a front door other than this process: API Gateway's
 * WebSocket API in AWS (its `@connections` management API), a registry of `ws` sockets locally.
 * The realtime relay for API Gateway writes to the client through this port only, so the core
 * never asks which one it has.
 */
export type SendResult = 'sent' | 'gone' | 'too_large';

export interface ClientConnections {
  /** One message to the client: `gone` when the connection has closed, `too_large` above the front door's message limit. */
  send(connectionId: string, data: Uint8Array, binary: boolean): Promise<SendResult>;
  /** Closes the client's connection (nothing happens when it is gone already). */
  close(connectionId: string): Promise<void>;
}
