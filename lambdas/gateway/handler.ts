/** The gateway function: API Gateway REST proxy event in, streamed HTTP response out. */
import { Readable } from 'node:stream';
import middy from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { createApp } from '../../layers/core/src/app.ts';
import { fastBodyOf } from '../../layers/core/src/http/bodies.ts';
import { gatewayModule } from '../../layers/core/src/gateway/routes.ts';
import { mcpModule } from '../../layers/core/src/mcp/gateway/routes.ts';
import { eventToRequest, splitHeaders } from '../shared/apigw.ts';
import type { Logger } from '@aws-lambda-powertools/logger';
import { depsFromEnv, lambdaLogger } from '../shared/deps.ts';
import { flushHooks, invocationLogging } from '../shared/observability.ts';

export function createGatewayHandler(getDeps: () => Promise<CoreDeps>, logger: Logger = lambdaLogger) {
  let app: ReturnType<typeof createApp> | undefined;
  let deps: CoreDeps | undefined;
  return (
    middy<APIGatewayProxyEvent>({
      executionMode: executionModeStreamifyResponse,
      // Runs once the response has been streamed: the hooks' work must finish before Lambda freezes.
      requestEnd: async () => {
        if (deps) await flushHooks(deps);
      },
    })
      // One trace id (set on the event when absent) for the pipeline and every log line of this invocation.
      .use(invocationLogging(logger))
      .handler(async (event) => {
        deps ??= await getDeps();
        app ??= createApp(deps, [gatewayModule, mcpModule]);
        const res = await app.fetch(eventToRequest(event));
        const { headers, cookies } = splitHeaders(res);
        // A provider's answer (audio and file bytes too) is piped from its Node stream; everything else
        // is text or a web stream. Middy takes strings and streams only, and pipes a stream through
        // stream.pipeline (an AbortController and a DOMException per answer): bytes whole in memory (a
        // priced answer) go as a string when they are valid UTF-8, and are written at once.
        const fast = fastBodyOf(res);
        const body = fast instanceof Uint8Array ? (utf8OrUndefined(fast) ?? Readable.from([fast])) : (fast ?? res.body ?? '');
        return { statusCode: res.status, headers, cookies, body };
      })
  );
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The bytes as text when they are exactly UTF-8 (written back, they are the same bytes); else undefined. */
function utf8OrUndefined(bytes: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}

export const handler = createGatewayHandler(depsFromEnv);
