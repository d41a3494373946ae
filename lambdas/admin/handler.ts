/** The admin function: API Gateway REST proxy event in, buffered proxy result out. */
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { createApp } from '../../layers/core/src/app.ts';
import { adminModule } from '../../layers/core/src/admin/routes.ts';
import { eventToRequest, responseToResult } from '../shared/apigw.ts';
import type { Logger } from '@aws-lambda-powertools/logger';
import { depsFromEnv, lambdaLogger } from '../shared/deps.ts';
import { invocationLogging } from '../shared/observability.ts';

export function createAdminHandler(getDeps: () => Promise<CoreDeps>, logger: Logger = lambdaLogger) {
  let app: ReturnType<typeof createApp> | undefined;
  return (
    middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
      // Every log line of the invocation carries its trace id.
      .use(invocationLogging(logger))
      .handler(async (event) => {
        const deps = await getDeps();
        app ??= createApp(deps, [adminModule]);
        return responseToResult(await app.fetch(eventToRequest(event)));
      })
  );
}

export const handler = createAdminHandler(depsFromEnv);
