/** A large request body sent piece by piece, for tests of body limits: the answer may come while it is still being sent. */
import http from 'node:http';

export interface Sent {
  /** 0: the server closed the connection (after refusing) before the client could read an answer. */
  status: number;
  body: string;
  /** Bytes the client had written when the answer came. */
  written: number;
}

/**
 * Sends `total` bytes (declared in Content-Length unless `chunked`) in 256 KiB pieces, stopping as
 * soon as an answer arrives. `head` (e.g. a multipart preamble) goes first, counted in `total`.
 */
export function send(url: string, headers: Record<string, string>, total: number, chunked = false, head?: Buffer): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const piece = Buffer.alloc(256 << 10, 0x61);
    let written = 0;
    let answered = false;
    const req = http.request(url, { method: 'POST', headers: chunked ? headers : { ...headers, 'content-length': String(total) } }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), written });
        req.destroy();
      });
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (answered) return;
      // The server refused and closed the connection while the client was still writing.
      if (err.code === 'EPIPE' || err.code === 'ECONNRESET') resolve({ status: 0, body: '', written });
      else reject(err);
    });
    if (head) {
      req.write(head);
      written += head.length;
    }
    const pump = () => {
      while (!answered && written < total) {
        written += piece.length;
        if (!req.write(piece)) return void req.once('drain', pump);
      }
      if (!answered) req.end();
    };
    pump();
  });
}
