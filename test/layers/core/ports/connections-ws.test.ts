/**
 * The local `@connections` adapter over real `ws` sockets: messages reach the registered client
 * (text and binary), API Gateway's 128 KB limit is kept, a closed or unknown connection is gone.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { API_GATEWAY_MESSAGE_BYTES, WebSocketConnections } from '../../../../layers/core/src/ports/local/connections-ws.ts';
import { eventually } from '../../../support/until.ts';

let wss: WebSocketServer;
const connections = new WebSocketConnections();

beforeAll(async () => {
  wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((r) => wss.once('listening', r));
  wss.on('connection', (ws, req) => connections.register(new URL(req.url ?? '/', 'http://x').searchParams.get('id') ?? '', ws));
});
afterAll(async () => {
  for (const ws of wss.clients) ws.terminate();
  await new Promise<void>((r) => wss.close(() => r()));
});

async function client(id: string) {
  const ws = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}/?id=${id}`);
  const got: Array<{ data: string; binary: boolean }> = [];
  ws.on('message', (d: Buffer, binary: boolean) => got.push({ data: d.toString(), binary }));
  // The server registers the socket when it sends its 101, before the client sees 'open'.
  await new Promise((r) => ws.once('open', r));
  return { ws, got };
}

describe('WebSocketConnections', () => {
  it('sends text and binary messages to the registered connection, and closes it', async () => {
    const c = await client('a');
    expect(await connections.send('a', Buffer.from('{"type":"x"}'), false)).toBe('sent');
    expect(await connections.send('a', Buffer.from('bin'), true)).toBe('sent');
    await eventually(() =>
      expect(c.got).toEqual([
        { data: '{"type":"x"}', binary: false },
        { data: 'bin', binary: true },
      ]),
    );
    const closed = new Promise<number>((r) => c.ws.once('close', (code) => r(code)));
    await connections.close('a');
    expect(await closed).toBe(1000);
    await eventually(async () => expect(await connections.send('a', Buffer.from('late'), false)).toBe('gone'));
  });

  it('refuses a message above 128 KB and answers gone for an unknown connection', async () => {
    await client('b');
    expect(await connections.send('b', Buffer.alloc(API_GATEWAY_MESSAGE_BYTES + 1), false)).toBe('too_large');
    expect(await connections.send('nobody', Buffer.from('x'), false)).toBe('gone');
  });
});
