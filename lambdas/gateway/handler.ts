/** The gateway function: API Gateway REST proxy event in, streamed HTTP response out. */
import middy from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { createApp } from '../../layers/core/src/http/app.ts';
import { fastBodyOf } from '../../layers/core/src/http/bodies.ts';
import { gatewayModule } from '../../layers/core/src/gateway/routes.ts';
import { eventToRequest, splitHeaders } from '../shared/apigw.ts';
import { depsFromEnv } from '../shared/deps.ts';

export function createGatewayHandler(getDeps: () => Promise<CoreDeps>) {
  let app: ReturnType<typeof createApp> | undefined;
  return middy<APIGatewayProxyEvent>({ executionMode: executionModeStreamifyResponse }).handler(async (event) => {
    app ??= createApp(await getDeps(), [gatewayModule]);
    const res = await app.fetch(eventToRequest(event));
    const { headers, cookies } = splitHeaders(res);
    // A provider's answer is piped from its Node stream; everything else is text or a web stream.
    return { statusCode: res.status, headers, cookies, body: fastBodyOf(res) ?? res.body ?? '' };
  });
}

export const handler = createGatewayHandler(depsFromEnv);
