/**
 * Observability wiring of the Lambda functions. Lambda freezes the environment once an invocation
 * ends, so the work gateway hooks start after the response (log events, limit settlement) is
 * finished before the invocation does; and every log line carries the request's trace id.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { ALIAS_PREFIX } from '../../layers/core/src/http/header-alias.ts';

/**
 * Per-invocation log keys: Powertools adds the Lambda context and drops every key appended during
 * the invocation once it ends (`resetKeys`); the request's trace id is one of them.
 */
export function invocationLogging(logger: Logger): MiddlewareObj<APIGatewayProxyEvent>[] {
  const traceId: MiddlewareObj<APIGatewayProxyEvent> = {
    before: (request) => {
      logger.appendKeys({ trace_id: ensureTraceId(request.event) });
    },
  };
  return [injectLambdaContext(logger, { resetKeys: true }) as MiddlewareObj<APIGatewayProxyEvent>, traceId];
}

/**
 * The request's `x-gw-trace-id` (or its `x-portkey-` alias, which the core reads as the same
 * header), generated and set on the event when the client sent none.
 */
export function ensureTraceId(event: APIGatewayProxyEvent): string {
  const headers = (event.headers ??= {});
  for (const wanted of ['x-gw-trace-id', `${ALIAS_PREFIX}trace-id`]) {
    const name = Object.keys(headers).find((k) => k.toLowerCase() === wanted);
    const given = name ? headers[name] : undefined;
    if (given) return given;
  }
  const id = randomUUID();
  headers['x-gw-trace-id'] = id;
  if (event.multiValueHeaders) event.multiValueHeaders['x-gw-trace-id'] = [id];
  return id;
}

/** Waits for the gateway hooks' `complete` (scheduled after the response) and its work. */
export async function flushHooks(deps: CoreDeps): Promise<void> {
  // The pipeline runs `complete` in a setImmediate once the body has ended.
  await new Promise((resolve) => setImmediate(resolve));
  await Promise.all(deps.gatewayHooks.map((h) => h.flush?.()));
}
