/**
 * One keep-alive connection driven by hand (node:net), for what a pooled HTTP client does after an
 * early answer: it finishes sending the body it declared, then sends its next request on the same
 * socket. Either the server closed the connection, or it answers that next request; a server that
 * neither reads the rest of the body nor closes leaves the client stuck, which `hang` reports.
 */
import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
}

export interface EarlyRefusal {
  /** The answer to the oversized request (undefined: the connection closed before it came). */
  first: RawResponse | undefined;
  /** What became of the connection afterwards. */
  then: { kind: 'closed' } | { kind: 'answered'; response: RawResponse } | { kind: 'hang' };
}

const CRLF2 = '\r\n\r\n';

/** A whole response at the start of `buf` (Content-Length or chunked), and the bytes after it. */
function parseResponse(buf: Buffer): { response: RawResponse; rest: Buffer } | undefined {
  const end = buf.indexOf(CRLF2);
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const response = { status: Number(statusLine.split(' ')[1]), headers };
  const body = buf.subarray(end + CRLF2.length);
  if (headers['transfer-encoding'] === 'chunked') {
    const last = body.indexOf('0\r\n\r\n');
    if (last < 0 || (last > 0 && body.subarray(last - 2, last).toString() !== '\r\n')) return undefined;
    return { response, rest: body.subarray(last + 5) };
  }
  const length = Number(headers['content-length'] ?? 0);
  return body.length < length ? undefined : { response, rest: body.subarray(length) };
}

/**
 * Sends `head` (a request line and headers declaring `total` bytes of body), then the body in
 * 256 KiB pieces until an answer comes; then, as a keep-alive client, the rest of the body and
 * `next` (a whole request). `waitMs` bounds how long the client waits for progress.
 */
export function earlyRefusal(url: string, head: string, total: number, next: string, waitMs = 15_000): Promise<EarlyRefusal> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    const piece = Buffer.alloc(256 << 10, 0x61);
    let received: Buffer = Buffer.alloc(0);
    let first: RawResponse | undefined;
    let written = 0;
    let settled = false;
    const done = (then: EarlyRefusal['then']) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ first, then });
    };
    const timer = setTimeout(() => done({ kind: 'hang' }), waitMs);
    const pump = () => {
      while (written < total && !settled) {
        const n = Math.min(piece.length, total - written);
        written += n;
        if (!socket.write(n === piece.length ? piece : piece.subarray(0, n))) return void socket.once('drain', pump);
      }
      if (first && !settled) socket.write(next);
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const parsed = parseResponse(received);
      if (!parsed) return;
      if (first) return done({ kind: 'answered', response: parsed.response });
      first = parsed.response;
      received = parsed.rest;
      // The body was all sent before the answer came: the next request goes now.
      if (written >= total) socket.write(next);
    });
    socket.on('error', () => done({ kind: 'closed' }));
    socket.on('close', () => done({ kind: 'closed' }));
    socket.once('connect', () => {
      socket.write(head);
      pump();
    });
  });
}

/** A request line and headers for `earlyRefusal`. */
export function requestHead(method: string, path: string, headers: Record<string, string>): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'host: localhost', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return `${lines.join('\r\n')}${CRLF2}`;
}
