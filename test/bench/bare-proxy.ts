/**
 * The ceiling for a Node gateway on this machine: a minimal node:http pass-through proxy in front of
 * the bench's mock provider, run as a child process of its own. It does nothing a gateway must do
 * (no auth, no parsing, no logs): one keep-alive agent, request and answer bodies piped as they come,
 * so any gap between it and Gantry is the cost of Gantry's features and code, not of Node's HTTP.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { rssReport, type ReadyMessage } from './protocol.ts';

const upstreamUrl = process.env.BENCH_UPSTREAM;
if (!upstreamUrl) throw new Error('BENCH_UPSTREAM must be the mock provider URL');
const upstream = new URL(upstreamUrl);

// As many sockets as the bench's connections and more, all kept open between requests.
const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256 });

const server = http.createServer((req, res) => {
  const out = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers, agent }, (up) => {
    res.writeHead(up.statusCode ?? 502, up.headers);
    up.pipe(res);
  });
  out.on('error', () => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"upstream failed"}}');
  });
  req.pipe(out);
});
server.keepAliveTimeout = 65_000;

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  const ready: ReadyMessage = { type: 'ready', url: `http://127.0.0.1:${port}` };
  process.send?.(ready);
});

process.on('message', (m: unknown) => {
  if (typeof m === 'object' && m !== null && 'type' in m && m.type === 'rss') {
    process.send?.(rssReport());
  }
});

// The bench is gone (or done): stop with it.
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
