/** Hand-made API Gateway REST proxy events, shaped as API Gateway sends them. */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { WebSocketEvent } from '../../lambdas/realtime/handler.ts';

/** A REST proxy event for GET /v1/health; `patch` replaces any field. */
export function restEvent(patch: Partial<APIGatewayProxyEvent> = {}): APIGatewayProxyEvent {
  return {
    httpMethod: 'GET',
    path: '/v1/health',
    resource: '/v1/{proxy+}',
    headers: { Host: 'abc123.execute-api.eu-west-1.amazonaws.com' },
    multiValueHeaders: { Host: ['abc123.execute-api.eu-west-1.amazonaws.com'] },
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: { proxy: 'health' },
    stageVariables: null,
    body: null,
    isBase64Encoded: false,
    requestContext: {} as APIGatewayProxyEvent['requestContext'],
    ...patch,
  };
}

/** A request to `path` with the given headers, each sent once (both header maps filled, as API Gateway does). */
export function requestEvent(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body: string | null = null,
  patch: Partial<APIGatewayProxyEvent> = {},
): APIGatewayProxyEvent {
  const all: Record<string, string> = { Host: 'abc123.execute-api.eu-west-1.amazonaws.com', ...headers };
  return restEvent({
    httpMethod: method,
    path,
    pathParameters: { proxy: path.replace(/^\/v1\//, '') },
    headers: all,
    multiValueHeaders: Object.fromEntries(Object.entries(all).map(([k, v]) => [k, [v]])),
    body,
    ...patch,
  });
}

/** An API Gateway WebSocket event for `routeKey` on `connectionId`, shaped as API Gateway sends it; `patch` adds fields. */
export function websocketEvent(routeKey: string, connectionId: string, patch: Record<string, unknown> = {}): WebSocketEvent {
  const eventType = routeKey === '$connect' ? 'CONNECT' : routeKey === '$disconnect' ? 'DISCONNECT' : 'MESSAGE';
  return {
    requestContext: {
      routeKey,
      eventType,
      connectionId,
      messageId: eventType === 'MESSAGE' ? `msg-${Math.random().toString(36).slice(2)}` : undefined,
      extendedRequestId: 'ext-1',
      requestTime: '25/Nov/2026:00:00:00 +0000',
      messageDirection: 'IN',
      stage: 'prod',
      connectedAt: 1_795_000_000_000,
      requestTimeEpoch: 1_795_000_000_000,
      requestId: 'req-1',
      domainName: 'ws123.execute-api.eu-west-1.amazonaws.com',
      apiId: 'ws123',
    },
    isBase64Encoded: false,
    ...patch,
  } as WebSocketEvent;
}
