/**
 * SQS as several consumers share it: one HTTP server speaking SQS's JSON protocol (POST /, the
 * action in `X-Amz-Target: AmazonSQS.<Action>`, as @aws-sdk/client-sqs sends it). Standard queues
 * with long polling, a visibility timeout per queue (a received message that is not deleted in time
 * is delivered again, its ApproximateReceiveCount one higher) and batch sends and deletes.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Stored {
  id: string;
  body: string;
  receives: number;
  /** Invisible until then (ms since the epoch); 0: visible. */
  hiddenUntil: number;
  handle: string;
}

export interface SqsStandIn {
  url: string;
  /** The URL of the queue `name` (created on first use). */
  queueUrl(name: string): string;
  /** Messages still held (visible or in flight) by queue name. */
  depth(name: string): number;
  /** Deliveries of messages received again after their visibility timeout ran out. */
  redeliveries: number;
  /** Every action taken, by name. */
  actions: Map<string, number>;
  close(): Promise<void>;
}

export interface SqsStandInOptions {
  /** Every queue's visibility timeout (default 30 s, SQS's). */
  visibilityTimeoutMs?: number;
}

const ACCOUNT = '000000000000';
const md5 = (s: string) => createHash('md5').update(s).digest('hex');
type Body = Record<string, unknown>;

export async function startSqsStandIn(opts: SqsStandInOptions = {}): Promise<SqsStandIn> {
  const visibilityMs = opts.visibilityTimeoutMs ?? 30_000;
  const queues = new Map<string, Stored[]>();
  const waiting = new Set<() => void>();
  const state = { redeliveries: 0, actions: new Map<string, number>() };
  const queueOf = (url: unknown): Stored[] => {
    const name = new URL(String(url)).pathname.split('/')[2] ?? '';
    let q = queues.get(name);
    if (!q) queues.set(name, (q = []));
    return q;
  };
  const wake = () => {
    for (const w of waiting) w();
  };
  const enqueue = (q: Stored[], body: string) => {
    const m = { id: randomUUID(), body, receives: 0, hiddenUntil: 0, handle: '' };
    q.push(m);
    return m;
  };

  const take = (q: Stored[], max: number): Stored[] => {
    const now = Date.now();
    const out = q.filter((m) => m.hiddenUntil <= now).slice(0, max);
    for (const m of out) {
      if (m.receives > 0) state.redeliveries++;
      m.receives++;
      m.hiddenUntil = now + visibilityMs;
      m.handle = randomUUID();
    }
    return out;
  };

  /** Long polling: answers as soon as messages are visible, or after WaitTimeSeconds with none. */
  const receive = async (body: Body, req: IncomingMessage): Promise<Body> => {
    const q = queueOf(body.QueueUrl);
    const max = Math.min(10, Number(body.MaxNumberOfMessages ?? 1));
    const deadline = Date.now() + Number(body.WaitTimeSeconds ?? 0) * 1000;
    let got = take(q, max);
    while (got.length === 0 && Date.now() < deadline && !req.socket.destroyed) {
      // Woken by a send, or by the next message whose visibility timeout runs out.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(100, Math.max(1, deadline - Date.now())));
        function done() {
          clearTimeout(timer);
          waiting.delete(done);
          resolve();
        }
        waiting.add(done);
      });
      got = take(q, max);
    }
    return {
      Messages: got.map((m) => ({
        MessageId: m.id,
        ReceiptHandle: m.handle,
        MD5OfBody: md5(m.body),
        Body: m.body,
        Attributes: { ApproximateReceiveCount: String(m.receives) },
      })),
    };
  };

  const remove = (q: Stored[], handle: unknown): boolean => {
    const at = q.findIndex((m) => m.handle === handle);
    if (at >= 0) q.splice(at, 1);
    return at >= 0;
  };

  const act = async (op: string, body: Body, req: IncomingMessage): Promise<Body> => {
    const q = queueOf(body.QueueUrl);
    switch (op) {
      case 'SendMessage': {
        const m = enqueue(q, String(body.MessageBody));
        wake();
        return { MessageId: m.id, MD5OfMessageBody: md5(m.body) };
      }
      case 'SendMessageBatch': {
        const entries = body.Entries as { Id: string; MessageBody: string }[];
        const Successful = entries.map((e) => ({ Id: e.Id, MessageId: enqueue(q, e.MessageBody).id, MD5OfMessageBody: md5(e.MessageBody) }));
        wake();
        return { Successful, Failed: [] };
      }
      case 'ReceiveMessage':
        return receive(body, req);
      case 'DeleteMessage':
        remove(q, body.ReceiptHandle);
        return {};
      case 'DeleteMessageBatch': {
        // A stale handle (the message was received again since) deletes nothing, as in SQS.
        const entries = body.Entries as { Id: string; ReceiptHandle: string }[];
        const Successful = entries.filter((e) => remove(q, e.ReceiptHandle)).map((e) => ({ Id: e.Id }));
        const Failed = entries
          .filter((e) => !Successful.some((s) => s.Id === e.Id))
          .map((e) => ({ Id: e.Id, Code: 'ReceiptHandleIsInvalid', SenderFault: true, Message: 'stale receipt handle' }));
        return { Successful, Failed };
      }
      case 'GetQueueAttributes':
        return { Attributes: { ApproximateNumberOfMessages: String(q.length) } };
      default:
        throw new Error(`the stand-in does not serve ${op}`);
    }
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const op = String(req.headers['x-amz-target'] ?? '').replace(/^AmazonSQS\./, '');
      state.actions.set(op, (state.actions.get(op) ?? 0) + 1);
      const reply = (status: number, value: Body) => {
        if (!res.destroyed) res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0' }).end(JSON.stringify(value));
      };
      Promise.resolve()
        .then(() => act(op, JSON.parse(Buffer.concat(chunks).toString() || '{}') as Body, req))
        .then(
          (out) => reply(200, out),
          (err: unknown) => reply(400, { __type: 'com.amazonaws.sqs#InvalidAction', message: String(err) }),
        );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, {
    url,
    queueUrl: (name: string) => {
      queues.set(name, queues.get(name) ?? []);
      return `${url}/${ACCOUNT}/${name}`;
    },
    depth: (name: string) => queues.get(name)?.length ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
