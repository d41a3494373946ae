/**
 * The Fargate realtime relay's HTTP server: API Gateway's WebSocket routes (through the VPC link
 * and the load balancer) and the routes other tasks forward, handed to the core's relay service
 * (gateway/realtime/relay-service.ts). Wiring only; relay-main.ts runs it in the container.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { RelayService } from '../../layers/core/src/gateway/realtime/relay-service.ts';
import type { ClientConnections } from '../../layers/core/src/ports/connections.ts';

/** The largest client message API Gateway passes on (128 KB), with room for its framing. */
const MAX_BODY_BYTES = 256 * 1024;

export interface RelayServerOptions {
  deps: CoreDeps;
  connections: ClientConnections;
  port: number;
  host?: string;
  /** The address other tasks reach this one at (`ip:port`); the listening address when not given. */
  address?: string;
}

export interface RelayServer {
  url: string;
  service: RelayService;
  /** Ends every session (error event, close, settled), then stops listening. */
  stop(): Promise<void>;
}

export async function startRelayServer(opts: RelayServerOptions): Promise<RelayServer> {
  let service: RelayService | undefined;
  const server = http.createServer((req, res) => void answer(service!, req, res, opts.deps));
  await new Promise<void>((resolve) => server.listen(opts.port, opts.host ?? '0.0.0.0', resolve));
  const { port } = server.address() as AddressInfo;
  const host = opts.host ?? '127.0.0.1';
  service = new RelayService(opts.deps, { address: opts.address ?? `${host}:${port}`, connections: opts.connections });
  return {
    url: `http://${host}:${port}`,
    service,
    async stop() {
      await service.stop();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

async function answer(service: RelayService, req: IncomingMessage, res: ServerResponse, deps: CoreDeps): Promise<void> {
  try {
    const out = await service.handle(await toRequest(req));
    const headers: Record<string, string> = {};
    out.headers.forEach((v, k) => (headers[k] = v));
    res.writeHead(out.status, headers).end(Buffer.from(await out.arrayBuffer()));
  } catch (err) {
    deps.logger.error('realtime relay: a route failed', { error: err, path: req.url });
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { type: 'api_error', code: 'internal_error', message: 'The relay could not handle the route', param: null } }));
  }
}

async function toRequest(req: IncomingMessage): Promise<Request> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error(`a route's body is above ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  const headers = new Headers();
  for (const [name, values] of Object.entries(req.headersDistinct)) for (const v of values ?? []) headers.append(name, v);
  const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks);
  return new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? 'relay'}`), { method: req.method ?? 'GET', headers, ...(body ? { body } : {}) });
}
