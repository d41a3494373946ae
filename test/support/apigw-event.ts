/** Hand-made API Gateway REST proxy events, shaped as API Gateway sends them. */
import type { APIGatewayProxyEvent } from 'aws-lambda';

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
