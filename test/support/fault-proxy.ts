/**
 * A TCP proxy in front of DynamoDB Local that can forward, hang (accept and never answer) or be
 * down (nothing listens on its port, so connections are refused), to test what the service does
 * when its database misbehaves.
 */
import net from 'node:net';

export type FaultMode = 'pass' | 'hang' | 'down';

export interface FaultProxy {
  url: string;
  port: number;
  set(mode: FaultMode): Promise<void>;
  close(): Promise<void>;
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const { hostname, port: targetPort } = new URL(target);
  let mode: FaultMode = 'pass';
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = net.createServer((client) => {
    track(client);
    if (mode === 'hang') return; // read nothing, answer nothing
    const upstream = net.connect(Number(targetPort), hostname);
    track(upstream);
    client.pipe(upstream).pipe(client);
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  const dropAll = () => {
    for (const s of sockets) s.destroy();
  };
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    async set(next) {
      if (next === mode) return;
      const wasDown = mode === 'down';
      mode = next;
      // Pooled keep-alive connections must see the change too.
      dropAll();
      if (next === 'down') await new Promise<void>((resolve) => server.close(() => resolve()));
      else if (wasDown) await listen(port);
    },
    async close() {
      dropAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
