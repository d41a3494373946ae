/**
 * A mock realtime provider: a real `ws` server speaking the subset of OpenAI's Realtime API events
 * the gateway relays and meters. On connect it sends `session.created`; `session.update` answers
 * `session.updated`; `response.create` answers `response.created`, `response.output_text.delta`
 * events (as many as `response.metadata.deltas` asks, default 2, numbered in `delta`) and
 * `response.done` with `usage` in OpenAI's shape. Every event gets a fresh `event_id`.
 * `response.metadata.text` makes a whole GA-shaped response say that text instead, in deltas of
 * `metadata.chunk` characters (default 4): an assistant message (`metadata.kind` `text`, default),
 * an audio message with its transcript (`audio`) or a function call's arguments (`function_call`),
 * with the item events, the `.done` events and `response.done` that repeat the whole text.
 * `response.cancel` answers OpenAI's `response_cancel_not_active` error (every response is over by
 * then); `conversation.item.delete` answers `conversation.item.deleted`.
 * Test affordances, not OpenAI's: a binary frame is echoed back as binary, `mock.close` makes the
 * provider close with `code`, `mock.echo` comes back as it was sent (the bench's round trip),
 * `mock.bad_key` answers an `error` event quoting the key the socket was opened with, and a model named `refuse-<status>` is refused at the upgrade with
 * that HTTP status. Also mints client secrets (`POST /v1/realtime/client_secrets`, `/v1/realtime/sessions`).
 * Serves OpenAI's `/v1/realtime?model=` and Azure's `/openai/realtime?deployment=`.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export interface RealtimeConnection {
  url: string;
  headers: IncomingHttpHeaders;
  /** Text events received, parsed, in order. */
  events: Array<Record<string, unknown>>;
  binaryFrames: number;
  /** The close code the provider saw, once closed. */
  closedWith?: number;
  /** Sends an event on this socket unasked, as a provider does on its own (server VAD turns, long audio). */
  push(event: Record<string, unknown>): void;
}

export interface MockRealtime {
  url: string;
  connections: RealtimeConnection[];
  /** Client secret and session requests received (POST /v1/realtime/client_secrets, /v1/realtime/sessions). */
  secrets: Array<{ path: string; headers: IncomingHttpHeaders; body: Record<string, unknown> }>;
  /** The usage every `response.done` reports. */
  usage: Record<string, unknown>;
  close(): Promise<void>;
}

export const REALTIME_USAGE = {
  total_tokens: 1500,
  input_tokens: 1000,
  output_tokens: 500,
  input_token_details: { text_tokens: 600, audio_tokens: 400, cached_tokens: 200 },
  output_token_details: { text_tokens: 100, audio_tokens: 400 },
} as const;

let ids = 0;
const eventId = () => `event_mock_${++ids}`;

function send(ws: WebSocket, event: Record<string, unknown>): void {
  ws.send(JSON.stringify({ event_id: eventId(), ...event }));
}

function onEvent(ws: WebSocket, mock: MockRealtime, conn: RealtimeConnection, session: Record<string, unknown>, event: Record<string, unknown>): void {
  switch (event.type) {
    case 'session.update':
      Object.assign(session, event.session);
      return send(ws, { type: 'session.updated', session });
    case 'response.create': {
      const id = `resp_mock_${++ids}`;
      const meta = ((event.response as Record<string, unknown> | undefined)?.metadata ?? {}) as Record<string, unknown>;
      if (typeof meta.text === 'string') return sayText(ws, mock, id, meta);
      const deltas = Number(meta.deltas ?? 2);
      send(ws, { type: 'response.created', response: { id, object: 'realtime.response', status: 'in_progress', output: [] } });
      for (let i = 0; i < deltas; i++)
        send(ws, { type: 'response.output_text.delta', response_id: id, item_id: 'item_mock', output_index: 0, content_index: 0, delta: String(i) });
      return send(ws, { type: 'response.done', response: { id, object: 'realtime.response', status: 'completed', output: [], usage: mock.usage } });
    }
    case 'response.cancel': {
      const error = {
        type: 'invalid_request_error',
        code: 'response_cancel_not_active',
        message: 'Cancellation failed: no active response found.',
        param: null,
        event_id: event.event_id ?? null,
      };
      return send(ws, { type: 'error', error });
    }
    case 'conversation.item.delete':
      return send(ws, { type: 'conversation.item.deleted', item_id: event.item_id });
    case 'mock.echo':
      return void ws.send(JSON.stringify(event));
    case 'mock.bad_key': {
      // OpenAI's answer to a wrong key, which quotes the key it was given.
      const key = String(conn.headers.authorization ?? '').replace(/^Bearer\s+/i, '');
      return send(ws, {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          code: 'invalid_api_key',
          message: `Incorrect API key provided: ${key}.`,
          param: null,
          event_id: event.event_id ?? null,
        },
      });
    }
    case 'mock.close':
      return ws.close(Number(event.code ?? 1000), String(event.reason ?? ''));
    default:
    // Every other client event (input_audio_buffer.append ...) is taken silently.
  }
}

/** A whole response saying `meta.text`, as OpenAI's GA events put it. */
function sayText(ws: WebSocket, mock: MockRealtime, id: string, meta: Record<string, unknown>): void {
  const text = String(meta.text);
  const size = Number(meta.chunk ?? 4);
  const chunks = Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));
  const itemId = `item_mock_${++ids}`;
  const at = { response_id: id, item_id: itemId, output_index: 0 };
  send(ws, { type: 'response.created', response: { id, object: 'realtime.response', status: 'in_progress', output: [] } });
  let item: Record<string, unknown>;
  if (meta.kind === 'function_call') {
    const call = { id: itemId, object: 'realtime.item', type: 'function_call', call_id: `call_${ids}`, name: 'lookup' };
    send(ws, { type: 'response.output_item.added', response_id: id, output_index: 0, item: { ...call, status: 'in_progress', arguments: '' } });
    for (const delta of chunks) send(ws, { type: 'response.function_call_arguments.delta', ...at, call_id: call.call_id, delta });
    send(ws, { type: 'response.function_call_arguments.done', ...at, call_id: call.call_id, arguments: text });
    item = { ...call, status: 'completed', arguments: text };
  } else {
    const audio = meta.kind === 'audio';
    const part = audio ? { type: 'output_audio', transcript: text } : { type: 'output_text', text };
    const open = { id: itemId, object: 'realtime.item', type: 'message', role: 'assistant', status: 'in_progress', content: [] };
    send(ws, { type: 'response.output_item.added', response_id: id, output_index: 0, item: open });
    send(ws, { type: 'conversation.item.added', previous_item_id: null, item: open });
    send(ws, {
      type: 'response.content_part.added',
      ...at,
      content_index: 0,
      part: audio ? { type: 'output_audio', transcript: '' } : { type: 'output_text', text: '' },
    });
    for (const delta of chunks) {
      if (audio) send(ws, { type: 'response.output_audio.delta', ...at, content_index: 0, delta: Buffer.from(delta).toString('base64') });
      send(ws, { type: audio ? 'response.output_audio_transcript.delta' : 'response.output_text.delta', ...at, content_index: 0, delta });
    }
    send(
      ws,
      audio
        ? { type: 'response.output_audio_transcript.done', ...at, content_index: 0, transcript: text }
        : { type: 'response.output_text.done', ...at, content_index: 0, text },
    );
    send(ws, { type: 'response.content_part.done', ...at, content_index: 0, part });
    item = { ...open, status: 'completed', content: [part] };
  }
  send(ws, { type: 'response.output_item.done', response_id: id, output_index: 0, item });
  send(ws, { type: 'conversation.item.done', previous_item_id: null, item });
  send(ws, { type: 'response.done', response: { id, object: 'realtime.response', status: 'completed', output: [item], usage: mock.usage } });
}

const EXPIRES_AT = 1_750_000_600;

/** OpenAI's answers to minting a client secret (GA) and to creating a session (beta); undefined for other paths. */
function mintSecret(method: string, path: string, text: string): Record<string, unknown> | undefined {
  if (method !== 'POST') return undefined;
  const body = JSON.parse(text || '{}') as Record<string, unknown>;
  if (path === '/v1/realtime/client_secrets') {
    const session = (body.session ?? {}) as Record<string, unknown>;
    return { value: `ek_mock_${++ids}`, expires_at: EXPIRES_AT, session: { type: 'realtime', object: 'realtime.session', id: `sess_mock_${ids}`, ...session } };
  }
  if (path === '/v1/realtime/sessions') {
    return { id: `sess_mock_${++ids}`, object: 'realtime.session', ...body, client_secret: { value: `ek_mock_${ids}`, expires_at: EXPIRES_AT } };
  }
  return undefined;
}

export async function startMockRealtime(): Promise<MockRealtime> {
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const minted = mintSecret(req.method ?? '', new URL(req.url ?? '/', 'http://mock').pathname, text);
      if (!minted) return void res.writeHead(426).end();
      mock.secrets.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(text) as Record<string, unknown> });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(minted));
    });
  });
  const wss = new WebSocketServer({ noServer: true });
  const mock: MockRealtime = { url: '', connections: [], secrets: [], usage: { ...REALTIME_USAGE }, close: async () => undefined };

  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://mock');
    const model = url.searchParams.get('model') ?? url.searchParams.get('deployment') ?? '';
    const refused = /^refuse-(\d{3})$/.exec(model);
    if (refused || !/^\/(v1|openai|openai\/v1)\/realtime$/.test(url.pathname)) {
      const status = refused ? Number(refused[1]) : 404;
      const body = JSON.stringify({ error: { message: `mock refused with ${status}`, type: 'invalid_request_error', code: null, param: null } });
      socket.end(`HTTP/1.1 ${status} Refused\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn: RealtimeConnection = { url: req.url ?? '', headers: req.headers, events: [], binaryFrames: 0, push: (event) => send(ws, event) };
      mock.connections.push(conn);
      const session: Record<string, unknown> = { id: `sess_mock_${++ids}`, object: 'realtime.session', model };
      ws.on('message', (data: Buffer, binary: boolean) => {
        if (binary) {
          conn.binaryFrames++;
          ws.send(data, { binary: true });
          return;
        }
        const event = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
        conn.events.push(event);
        onEvent(ws, mock, conn, session, event);
      });
      ws.on('close', (code) => (conn.closedWith = code));
      send(ws, { type: 'session.created', session });
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  mock.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  mock.close = () =>
    new Promise<void>((resolve) => {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return mock;
}
