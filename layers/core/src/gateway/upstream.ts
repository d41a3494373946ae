/**
 * Outbound HTTP to providers. Plain node:http(s) with keep-alive agents: it is markedly cheaper per
 * request than fetch, and its `lookup` hook lets every new connection be SSRF-checked on the
 * address DNS returned and again on the address actually connected to.
 *
 * Every answer comes back with the credentials its request carried masked (headers and body):
 * this is the one place every provider, tool server and check answer passes, so a server that
 * echoes the key it was sent cannot hand it to the client, the request log or the cache.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { GantryError, RequestTimeoutError, UpstreamError, ValidationError } from '../http/errors.ts';
import { assertConnectedAddress, createGuardedLookup, type TrustedHosts } from '../security/ssrf.ts';
import { isSendable, UNSENDABLE_MESSAGE } from './headers.ts';
import { codingOf, scrubAnswer, SecretSet } from './scrub.ts';
import { requestSecrets } from './scrub-sent.ts';
import type { Upstream, UpstreamRequest, UpstreamResponse } from '../ports/upstream.ts';

export type { UpstreamRequest, UpstreamResponse };

const CONNECT_FAILURES: Record<string, number> = {
  ECONNREFUSED: 502,
  ECONNRESET: 502,
  EPIPE: 502,
  ENOTFOUND: 502,
  EAI_AGAIN: 503,
  ETIMEDOUT: 503,
  EHOSTUNREACH: 502,
  ENETUNREACH: 502,
};

export interface UpstreamOptions {
  /**
   * Longest silence between two bytes of an answer once its headers came (default 60 s): a
   * provider that stalls, or sends fewer bytes than its Content-Length and keeps the connection
   * open, is cut, and the body errors with a 502 naming the cause.
   */
  idleTimeoutMs?: number;
}

const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

/** Cuts a body that has been silent for `ms`; the timer goes with the body, never with the pooled socket. */
function guardIdle(res: IncomingMessage, ms: number, host: string): void {
  const socket = res.socket;
  const onTimeout = () =>
    res.destroy(new UpstreamError(502, `The provider at ${host} sent nothing for ${Math.round(ms / 1000)} s in the middle of its answer`));
  socket.setTimeout(ms);
  socket.on('timeout', onTimeout);
  res.once('close', () => {
    socket.off('timeout', onTimeout);
    socket.setTimeout(0);
  });
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What Node's HTTP client throws for a header it will not send. */
const HEADER_CODES: ReadonlySet<string> = new Set(['ERR_INVALID_CHAR', 'ERR_INVALID_HTTP_TOKEN', 'ERR_HTTP_INVALID_HEADER_VALUE']);

/**
 * The last guard before the socket: a header Node will not send (a value from a stored credential,
 * a client header, a provider option that no parser checked) is the request's fault, a 400 naming
 * the header (callers rename it to the field it came from), never a 500. Checked only once Node
 * refused, so a request that can be sent costs nothing.
 */
export function unsendableHeader(headers: Readonly<Record<string, string>>): ValidationError | undefined {
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) return ValidationError.field(name, 'is not a valid header name');
    if (!isSendable(value)) return ValidationError.field(name, UNSENDABLE_MESSAGE);
  }
  return undefined;
}

/** An answer that is scrubbed must be readable: asked for without a content coding (a client's Accept-Encoding replaced). */
function identityEncoded(headers: Record<string, string>): Record<string, string> {
  if (headers['accept-encoding'] === 'identity') return headers;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (name.toLowerCase() !== 'accept-encoding') out[name] = value;
  out['accept-encoding'] = 'identity';
  return out;
}

export class UpstreamClient implements Upstream {
  readonly #trusted: TrustedHosts;
  readonly #http: http.Agent;
  readonly #https: https.Agent;
  readonly #idleMs: number;

  constructor(trusted: TrustedHosts, options: UpstreamOptions = {}) {
    this.#trusted = trusted;
    this.#idleMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    const lookup = createGuardedLookup(trusted);
    const opts = { keepAlive: true, keepAliveMsecs: 1_000, maxSockets: 512, maxFreeSockets: 64, lookup };
    this.#http = new http.Agent(opts);
    this.#https = new https.Agent(opts);
  }

  send(req: UpstreamRequest): Promise<UpstreamResponse> {
    const { url } = req;
    const isHttps = url.protocol === 'https:';
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const secrets = SecretSet.of(req.secrets ? [...requestSecrets(url, req.headers), ...req.secrets] : requestSecrets(url, req.headers));
    const headers = secrets ? identityEncoded(req.headers) : req.headers;
    return new Promise<UpstreamResponse>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const fail = (err: GantryError) => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        req.signal?.removeEventListener('abort', onAbort);
        outgoing.destroy();
        reject(err);
      };
      const onAbort = () => fail(new UpstreamError(499, 'The client closed the request'));

      let outgoing: http.ClientRequest;
      try {
        outgoing = (isHttps ? https : http).request(
          {
            protocol: url.protocol,
            hostname,
            port: url.port || (isHttps ? 443 : 80),
            path: url.pathname + url.search,
            method: req.method,
            headers,
            agent: isHttps ? this.#https : this.#http,
            servername: isHttps ? hostname : undefined,
          },
          (res) => {
            if (settled) {
              res.destroy();
              return;
            }
            settled = true;
            if (timer) clearTimeout(timer);
            req.signal?.removeEventListener('abort', onAbort);
            guardIdle(res, this.#idleMs, url.host);
            const answer = { status: res.statusCode ?? 502, headers: res.headers, body: res as Readable };
            if (!secrets) return resolve(answer);
            if (codingOf(res.headers) === null) {
              res.destroy();
              return reject(
                new UpstreamError(
                  502,
                  `The provider at ${url.host} answered in a content coding Gantry cannot check (${secrets.text(String(res.headers['content-encoding']))})`,
                ),
              );
            }
            resolve(scrubAnswer(answer, secrets));
          },
        );
      } catch (err) {
        settled = true;
        const code = (err as NodeJS.ErrnoException).code ?? '';
        return reject((HEADER_CODES.has(code) && unsendableHeader(headers)) || err);
      }

      outgoing.on('socket', (socket: Socket) => {
        // Reused keep-alive sockets were checked when they connected.
        if (!socket.connecting) return;
        socket.prependOnceListener('connect', () => {
          try {
            assertConnectedAddress(socket, hostname, this.#trusted);
          } catch (err) {
            fail(err as GantryError);
          }
        });
      });
      outgoing.on('error', (err: NodeJS.ErrnoException) => {
        if (err instanceof GantryError) return fail(err);
        const status = CONNECT_FAILURES[err.code ?? ''] ?? 502;
        fail(new UpstreamError(status, `Could not reach the provider at ${url.host} (${err.code ?? err.message})`));
      });

      if (req.timeoutMs !== undefined) {
        timer = setTimeout(() => fail(new RequestTimeoutError(req.timeoutMs ?? 0)), req.timeoutMs);
      }
      if (req.signal) {
        if (req.signal.aborted) return onAbort();
        req.signal.addEventListener('abort', onAbort, { once: true });
      }
      outgoing.end(req.body);
    });
  }

  close(): void {
    this.#http.destroy();
    this.#https.destroy();
  }
}
