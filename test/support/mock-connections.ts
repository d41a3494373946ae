/**
 * A stand-in for API Gateway's `@connections` management API: a real HTTP server that records
 * every message posted to a connection (PostToConnection), answers 410 GoneException for a
 * connection that was deleted or marked gone, and 413 above API Gateway's 128 KB message limit.
 * GetConnection (GET) answers the connection's details while it is open. A connection in `pending`
 * is one whose `$connect` has not answered yet: API Gateway answers 410 until it has.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MockConnections {
  /** The stage endpoint to give the management client (`http://127.0.0.1:<port>/prod`). */
  endpoint: string;
  /** Messages posted, by connection id, in the order received. */
  posted: Map<string, Buffer[]>;
  /** Connections deleted (DeleteConnection) or gone. */
  deleted: Set<string>;
  /** Connections not yet established (their `$connect` still running): posts are answered 410. */
  pending: Set<string>;
  /** Text messages posted to a connection, parsed. */
  events(connectionId: string): Array<Record<string, unknown>>;
  close(): Promise<void>;
}

const MESSAGE_LIMIT = 128 * 1024;

export async function startMockConnections(): Promise<MockConnections> {
  const mock: MockConnections = {
    endpoint: '',
    posted: new Map(),
    deleted: new Set(),
    pending: new Set(),
    events: (id) => (mock.posted.get(id) ?? []).map((b) => JSON.parse(b.toString('utf8')) as Record<string, unknown>),
    close: async () => undefined,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const m = /^\/prod\/@connections\/([^/?]+)$/.exec(req.url ?? '');
      if (!m) return void res.writeHead(404).end();
      const id = decodeURIComponent(m[1]!);
      const fail = (status: number, type: string) =>
        res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type }).end(JSON.stringify({ message: type }));
      if (mock.deleted.has(id) || mock.pending.has(id)) return fail(410, 'GoneException');
      if (req.method === 'GET') {
        const at = new Date().toISOString();
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ connectedAt: at, lastActiveAt: at, identity: { sourceIp: '127.0.0.1', userAgent: 'test' } }));
      }
      if (req.method === 'DELETE') {
        mock.deleted.add(id);
        return void res.writeHead(204).end();
      }
      const body = Buffer.concat(chunks);
      if (body.length > MESSAGE_LIMIT) return fail(413, 'PayloadTooLargeException');
      mock.posted.set(id, [...(mock.posted.get(id) ?? []), body]);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  mock.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prod`;
  mock.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return mock;
}
