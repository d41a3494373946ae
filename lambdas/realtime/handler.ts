/**
 * The realtime function behind API Gateway's WebSocket API: `$connect`, `$default` and
 * `$disconnect` events in, the core's relay (gateway/realtime/apigw-relay.ts) does the work, and
 * writes to clients through the stage's `@connections` endpoint. Wiring only.
 */
import type { APIGatewayProxyResult, APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { ApiGatewayRelay } from '../../layers/core/src/gateway/realtime/apigw-relay.ts';
import { ApiGatewayConnections } from '../../layers/core/src/ports/aws/connections-apigw.ts';
import type { ClientConnections } from '../../layers/core/src/ports/connections.ts';
import { splitHeaders } from '../shared/apigw.ts';
import { depsFromEnv } from '../shared/deps.ts';
import { flushHooks } from '../shared/observability.ts';

/** What API Gateway sends a WebSocket route: `$connect` carries the upgrade's headers and query too. */
export type WebSocketEvent = APIGatewayProxyWebsocketEventV2 & {
  headers?: Record<string, string | undefined>;
  multiValueHeaders?: Record<string, string[] | undefined>;
  queryStringParameters?: Record<string, string | undefined> | null;
  requestContext: APIGatewayProxyWebsocketEventV2['requestContext'] & { disconnectStatusCode?: number };
};

/** The stage's management endpoint, as API Gateway names it in every event. */
const stageConnections = (event: WebSocketEvent): ClientConnections =>
  new ApiGatewayConnections(`https://${event.requestContext.domainName}/${event.requestContext.stage}`);

export function createRealtimeHandler(getDeps: () => Promise<CoreDeps>, connectionsFor: (event: WebSocketEvent) => ClientConnections = stageConnections) {
  let relay: ApiGatewayRelay | undefined;
  return async (event: WebSocketEvent): Promise<APIGatewayProxyResult> => {
    const deps = await getDeps();
    relay ??= new ApiGatewayRelay(deps, relayOptions(process.env));
    const { routeKey, connectionId } = event.requestContext;
    try {
      if (routeKey === '$connect') return await toResult(await relay.connect(connectionId, upgradeRequest(event)));
      if (routeKey === '$disconnect') await relay.disconnect(connectionId, event.requestContext.disconnectStatusCode ?? 1005);
      else {
        const data = Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8');
        await relay.message(connectionId, data, event.isBase64Encoded, connectionsFor(event));
      }
      return { statusCode: 200, body: '' };
    } finally {
      await flushHooks(deps);
    }
  };
}

/** `GW_REALTIME_QUIET_MS`, `GW_REALTIME_MAX_WAIT_MS`: how long a `$default` invocation waits for the provider (docs/realtime.md). */
function relayOptions(env: NodeJS.ProcessEnv): { quietMs?: number; maxWaitMs?: number } {
  const num = (v: string | undefined) => (v && Number.isFinite(Number(v)) && Number(v) > 0 ? Number(v) : undefined);
  const quietMs = num(env.GW_REALTIME_QUIET_MS);
  const maxWaitMs = num(env.GW_REALTIME_MAX_WAIT_MS);
  return { ...(quietMs ? { quietMs } : {}), ...(maxWaitMs ? { maxWaitMs } : {}) };
}

/** The upgrade as the core reads it: `GET /v1/realtime?...` with the client's headers. */
export function upgradeRequest(event: WebSocketEvent): Request {
  const headers = new Headers();
  if (event.multiValueHeaders) {
    for (const [k, vs] of Object.entries(event.multiValueHeaders)) for (const v of vs ?? []) headers.append(k, v);
  } else for (const [k, v] of Object.entries(event.headers ?? {})) if (v !== undefined) headers.set(k, v);
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(event.queryStringParameters ?? {})) if (v !== undefined) query.set(k, v);
  const qs = query.toString();
  return new Request(`https://${event.requestContext.domainName}/v1/realtime${qs ? `?${qs}` : ''}`, { method: 'GET', headers });
}

async function toResult(res: Response): Promise<APIGatewayProxyResult> {
  return { statusCode: res.status, headers: splitHeaders(res).headers, body: await res.text() };
}

export const handler = createRealtimeHandler(depsFromEnv);
