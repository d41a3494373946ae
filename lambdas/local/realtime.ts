/**
 * The local server's realtime WebSocket: upgrades on `/v1/realtime` are opened by the core
 * (authenticated, routed, admitted, the provider's socket connected) before the client's upgrade
 * is accepted; a refusal is written as the HTTP answer it is. Then the core relays. Served the
 * same way in both local modes: API Gateway's WebSocket API is another front door (docs/realtime.md).
 */
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Server as TlsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { MAX_REALTIME_MESSAGE_BYTES, openRealtime, type RealtimeSession } from '../../layers/core/src/gateway/realtime/connect.ts';
import { abandonRealtime, relayRealtime } from '../../layers/core/src/gateway/realtime/relay.ts';

export const REALTIME_PATH = '/v1/realtime';

/** Whether Node should hand this request to the `upgrade` listener (`shouldUpgradeCallback`). */
export const isRealtimeUpgrade = (req: IncomingMessage): boolean =>
  req.headers.upgrade?.toLowerCase() === 'websocket' && new URL(req.url ?? '/', 'http://local').pathname === REALTIME_PATH;

export interface RealtimeEndpoint {
  /** Ends every live session (1001, going away). */
  close(): void;
}

export function attachRealtime(server: Server | TlsServer, deps: CoreDeps): RealtimeEndpoint {
  const protocols = new WeakMap<IncomingMessage, string | undefined>();
  const answers = new WeakMap<IncomingMessage, Readonly<Record<string, string>>>();
  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: MAX_REALTIME_MESSAGE_BYTES,
    // Only the subprotocol the core chose, never a credential one.
    handleProtocols: (_offered, req) => protocols.get(req) ?? false,
  });
  // The 101 carries the gateway's headers, as every answer does: trace and log ids, provider, x-ratelimit-*.
  wss.on('headers', (lines: string[], req: IncomingMessage) => {
    for (const [name, value] of Object.entries(answers.get(req) ?? {})) lines.push(`${name}: ${value}`);
  });
  const live = new Set<WebSocket>();
  const track = (ws: WebSocket) => {
    live.add(ws);
    ws.once('close', () => live.delete(ws));
  };

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    void openRealtime(toRequest(req), deps).then(
      (opened) => (opened instanceof Response ? writeRefusal(socket, opened) : accept(opened, req, socket, head)),
      (err: unknown) => {
        deps.logger.error('realtime upgrade failed', { error: err });
        socket.destroy();
      },
    );
  });

  function accept(session: RealtimeSession, req: IncomingMessage, socket: Duplex, head: Buffer): void {
    track(session.upstream);
    if (socket.destroyed) {
      // The client left while the provider was being connected: the session still ends (and is logged).
      return abandonRealtime(session);
    }
    protocols.set(req, session.protocol);
    answers.set(req, session.flight.out);
    wss.handleUpgrade(req, socket, head, (client) => {
      track(client);
      relayRealtime(session, client);
    });
  }

  return {
    close() {
      for (const ws of live) ws.close(1001, 'server shutting down');
      wss.close();
    },
  };
}

function toRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, values] of Object.entries(req.headersDistinct)) for (const v of values ?? []) headers.append(name, v);
  return new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`), { method: 'GET', headers });
}

/** The core's HTTP answer, on the socket the upgrade came on. */
async function writeRefusal(socket: Duplex, res: Response): Promise<void> {
  const body = Buffer.from(await res.arrayBuffer());
  const lines = [`HTTP/1.1 ${res.status} ${STATUS_CODES[res.status] ?? 'Refused'}`];
  res.headers.forEach((value, name) => lines.push(`${name}: ${value}`));
  lines.push(`content-length: ${body.length}`, 'connection: close', '', '');
  if (!socket.destroyed) socket.end(Buffer.concat([Buffer.from(lines.join('\r\n')), body]));
}
