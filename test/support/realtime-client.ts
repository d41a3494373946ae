/**
 * A `ws` client of Gantry's realtime endpoint for the end-to-end tests: it keeps every event the
 * relay sends and waits for the ones a test needs; `open` gives either a connected client or the
 * HTTP refusal of the upgrade with its body.
 */
import WebSocket from 'ws';

export type Json = Record<string, unknown>;

/** A refused upgrade: its HTTP status and JSON body. */
export interface Refusal {
  status: number;
  body: Json;
}

/** A connected client that keeps every event, and waits for the one it needs. */
export class RealtimeClient {
  readonly events: Json[] = [];
  readonly binary: Buffer[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly ws: WebSocket;
  #waiters: Array<() => void> = [];

  constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) this.binary.push(data);
      else this.events.push(JSON.parse(data.toString('utf8')) as Json);
      for (const w of this.#waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  send(event: Json): void {
    this.ws.send(JSON.stringify(event));
  }

  /** Resolves once `count` events of `type` have arrived. */
  async until(type: string, count = 1): Promise<Json[]> {
    for (;;) {
      const found = this.of(type);
      if (found.length >= count) return found;
      await new Promise<void>((r) => this.#waiters.push(r));
    }
  }

  /** The events of `type` received so far. */
  of(type: string): Json[] {
    return this.events.filter((e) => e.type === type);
  }
}

/** The upgrade's outcome: an open client, or the HTTP refusal with its body. */
export async function openRealtime(url: string, headers: Record<string, string>, protocols: string[] = []): Promise<RealtimeClient | Refusal> {
  const ws = new WebSocket(url, protocols, { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(new RealtimeClient(ws)));
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || '{}') as Json }));
    });
    ws.once('error', reject);
  });
}

/** The client of an accepted upgrade; a refusal fails the test with its status and body. */
export function connected(c: RealtimeClient | Refusal): RealtimeClient {
  if (!(c instanceof RealtimeClient)) throw new Error(`refused: ${c.status} ${JSON.stringify(c.body)}`);
  return c;
}
