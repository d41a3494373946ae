/** The admin function: API Gateway REST proxy event in, buffered proxy result out. */
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { createApp } from '../../layers/core/src/http/app.ts';
import { adminModule } from '../../layers/core/src/admin/routes.ts';
import { eventToRequest, responseToResult } from '../shared/apigw.ts';
import { depsFromEnv } from '../shared/deps.ts';
import { ensureTraceId } from '../shared/observability.ts';

export function createAdminHandler(getDeps: () => Promise<CoreDeps>) {
  let app: ReturnType<typeof createApp> | undefined;
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>().handler(async (event) => {
    const deps = await getDeps();
    app ??= createApp(deps, [adminModule]);
    // Every log line of the invocation carries its trace id.
    deps.logger.appendKeys({ trace_id: ensureTraceId(event) });
    try {
      return responseToResult(await app.fetch(eventToRequest(event)));
    } finally {
      deps.logger.removeKeys(['trace_id']);
    }
  });
}

export const handler = createAdminHandler(depsFromEnv);
