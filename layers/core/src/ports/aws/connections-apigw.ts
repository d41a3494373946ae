/**
 * API Gateway WebSocket clients through the `@connections` management API of one stage
 * (`https://<api>.execute-api.<region>.amazonaws.com/<stage>`). PostToConnection sends one message;
 * API Gateway answers 410 (GoneException) for a closed connection and 413 above its 128 KB limit.
 */
import {
  ApiGatewayManagementApiClient,
  DeleteConnectionCommand,
  PostToConnectionCommand,
  type ApiGatewayManagementApiClientConfig,
} from '@aws-sdk/client-apigatewaymanagementapi';
import type { ClientConnections, SendResult } from '../connections.ts';

const statusOf = (err: unknown): number | undefined => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
const nameOf = (err: unknown): string | undefined => (err as { name?: string }).name;

export class ApiGatewayConnections implements ClientConnections {
  readonly #client: ApiGatewayManagementApiClient;

  constructor(endpoint: string, config: Omit<ApiGatewayManagementApiClientConfig, 'endpoint'> = {}) {
    this.#client = new ApiGatewayManagementApiClient({ ...config, endpoint });
  }

  async send(connectionId: string, data: Uint8Array): Promise<SendResult> {
    try {
      await this.#client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: data }));
      return 'sent';
    } catch (err) {
      if (nameOf(err) === 'GoneException' || statusOf(err) === 410) return 'gone';
      if (nameOf(err) === 'PayloadTooLargeException' || statusOf(err) === 413) return 'too_large';
      throw err;
    }
  }

  async close(connectionId: string): Promise<void> {
    try {
      await this.#client.send(new DeleteConnectionCommand({ ConnectionId: connectionId }));
    } catch (err) {
      if (nameOf(err) !== 'GoneException' && statusOf(err) !== 410) throw err;
    }
  }
}
