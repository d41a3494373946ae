/**
 * DynamoDB Local behind an HTTP proxy that can refuse writes, as a table failing part way through a
 * batch does: reads always pass; once `refuseWritesAfter(n)` is called, n more write calls pass and
 * every later one (BatchWriteItem, PutItem, UpdateItem, DeleteItem, TransactWriteItems) is answered
 * as DynamoDB answers an internal error (HTTP 500, `InternalServerError`), until `accept()`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const WRITES = new Set(['BatchWriteItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems']);

export interface RefusingTable {
  url: string;
  refuseWritesAfter(n: number): void;
  accept(): void;
  /** Write calls refused so far. */
  refused(): number;
  close(): Promise<void>;
}

export async function startRefusingTable(target: string): Promise<RefusingTable> {
  const upstream = new URL(target);
  let allowance = Infinity;
  let refused = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const operation =
        String(req.headers['x-amz-target'] ?? '')
          .split('.')
          .pop() ?? '';
      if (WRITES.has(operation)) {
        if (allowance <= 0) {
          refused++;
          res.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' });
          res.end(JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'Internal server error' }));
          return;
        }
        allowance--;
      }
      const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      forward.once('error', () => res.destroy());
      forward.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    refuseWritesAfter: (n) => void (allowance = n),
    accept: () => void (allowance = Infinity),
    refused: () => refused,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
