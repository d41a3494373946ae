/** DynamoDB Local as `npm start` and the test setup run it: reachable on 127.0.0.1 only, on a free port. */
import net from 'node:net';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDynamoDBLocal, type DynamoDBLocal } from '../../../lambdas/local/dynamodb-local.ts';

/** 'open' when a TCP connection is accepted, else the error code. */
function probe(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve('open');
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('timeout');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
}

/** The machine's own addresses that are not loopback (where a neighbour would connect). */
const externalAddresses = (): string[] =>
  Object.values(os.networkInterfaces())
    .flat()
    .filter((a): a is os.NetworkInterfaceInfo => a !== undefined && !a.internal && a.family === 'IPv4')
    .map((a) => a.address);

describe('DynamoDB Local', () => {
  let ddb: DynamoDBLocal;
  beforeAll(async () => {
    ddb = await startDynamoDBLocal({ dataDir: ':memory:' });
  }, 90_000);
  afterAll(async () => {
    await ddb?.stop();
  });

  it('listens on 127.0.0.1 at a free port and on no other interface', async () => {
    expect(ddb.endpoint).toBe(`http://127.0.0.1:${ddb.port}`);
    expect(ddb.port).not.toBe(8000);
    expect(await probe('127.0.0.1', ddb.port)).toBe('open');
    const external = externalAddresses();
    expect(external.length, 'this machine has a non-loopback IPv4 address to probe').toBeGreaterThan(0);
    for (const address of external) expect(await probe(address, ddb.port)).not.toBe('open');
  });
});
