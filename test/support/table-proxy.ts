/**
 * DynamoDB Local behind an HTTP proxy that counts the requests it forwards by operation (each
 * attempt, retries included) and refuses those a test picks, as DynamoDB answers an internal
 * error (HTTP 500, `InternalServerError`, which the SDK retries before giving up). What a request
 * carries decides: e.g. refuse the writes that record batch answers and let every claim through.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedRequest {
  /** `PutItem`, `TransactWriteItems`, ... */
  operation: string;
  body: string;
}

export interface TableProxy {
  url: string;
  /** Requests forwarded or refused, by operation. */
  counts: Map<string, number>;
  /** While set, sees every request (before it is refused or forwarded): for counts of its own. */
  observe: ((req: ProxiedRequest) => void) | undefined;
  /** While set, requests it answers true for are refused. */
  refuse: ((req: ProxiedRequest) => boolean) | undefined;
  /** Requests refused so far. */
  refused: number;
  close(): Promise<void>;
}

export async function startTableProxy(target: string): Promise<TableProxy> {
  const upstream = new URL(target);
  const proxy: TableProxy = {
    url: '',
    counts: new Map(),
    observe: undefined,
    refuse: undefined,
    refused: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const operation =
        String(req.headers['x-amz-target'] ?? '')
          .split('.')
          .pop() ?? '';
      proxy.counts.set(operation, (proxy.counts.get(operation) ?? 0) + 1);
      const seen = proxy.observe || proxy.refuse ? { operation, body: body.toString('utf8') } : undefined;
      if (seen) proxy.observe?.(seen);
      if (seen && proxy.refuse?.(seen)) {
        proxy.refused++;
        res.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' });
        res.end(JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'Internal server error' }));
        return;
      }
      const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      forward.once('error', () => res.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
