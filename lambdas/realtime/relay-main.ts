/**
 * The Fargate realtime relay's container entry point (`gantry:realtimeRelay=fargate`): the relay
 * server (relay-server.ts) on the task's port, with the AWS adapters, and this task's private
 * address written on the sessions it holds. SIGTERM (ECS stopping the task) ends its sessions with
 * an `error` event and a close, settles each once, then exits. Wiring only.
 */
import { ApiGatewayConnections } from '../../layers/core/src/ports/aws/connections-apigw.ts';
import { depsFromEnv } from '../shared/deps.ts';
import { startRelayServer } from './relay-server.ts';

/** This task's private address from the ECS task metadata endpoint (v4), as the other tasks reach it. */
async function taskAddress(env: NodeJS.ProcessEnv, port: number): Promise<string | undefined> {
  if (env.GW_RELAY_ADDRESS) return env.GW_RELAY_ADDRESS;
  const metadata = env.ECS_CONTAINER_METADATA_URI_V4;
  if (!metadata) return undefined;
  const task = (await (await fetch(`${metadata}/task`)).json()) as { Containers?: { Networks?: { IPv4Addresses?: string[] }[] }[] };
  const ip = task.Containers?.flatMap((c) => c.Networks ?? []).flatMap((n) => n.IPv4Addresses ?? [])[0];
  return ip ? `${ip}:${port}` : undefined;
}

async function main(): Promise<void> {
  const endpoint = process.env.GW_CONNECTIONS_ENDPOINT;
  if (!endpoint) throw new Error('GW_CONNECTIONS_ENDPOINT is required: the WebSocket stage URL (https://<api>.execute-api.<region>.amazonaws.com/prod)');
  const port = Number(process.env.PORT ?? 8080);
  const deps = await depsFromEnv();
  const address = await taskAddress(process.env, port);
  const relay = await startRelayServer({ deps, connections: new ApiGatewayConnections(endpoint), port, ...(address ? { address } : {}) });
  deps.logger.info('realtime relay listening', { url: relay.url, address });
  process.once('SIGTERM', () => {
    void relay.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        deps.logger.error('realtime relay: stopping failed', { error: err });
        process.exit(1);
      },
    );
  });
}

await main();
