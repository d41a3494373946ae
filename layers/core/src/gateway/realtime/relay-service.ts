/**
 * The realtime relay as a long-running service (ECS Fargate tasks behind API Gateway's WebSocket
 * API, `gantry:realtimeRelay=fargate`): the task that takes `$connect` opens the provider's socket
 * and holds it for the session's life, running the local relay (relay.ts) with the client's side
 * played by API Gateway's `@connections` API. Provider events are posted as they arrive, whether or
 * not the client is sending; limits, guardrails and the session log are the local relay's.
 *
 * API Gateway reaches the tasks through a load balancer that picks any task, so each session is
 * pinned to its holder by a table item naming the holder's address: a task that gets a message or
 * `$disconnect` for a session it does not hold forwards it there. When the holder cannot be reached
 * (stopped or killed), the client is sent an `error` event and closed; a holder that stops
 * (SIGTERM) ends its own sessions that way first, settling each one once.
 *
 * The HTTP routes (what API Gateway's HTTP integrations call, with the connection id in a header):
 * `POST /realtime/connect` (the upgrade's headers and `?model=`), `POST /realtime/message` (the
 * client's message as the body), `POST /realtime/disconnect`, `GET /health`.
 */
import { EventEmitter } from 'node:events';
import type WebSocket from 'ws';
import type { CoreDeps } from '../../deps.ts';
import { RouteNotFoundError, ServiceUnavailableError, UpstreamError, ValidationError, toOpenAIBody, type GantryError } from '../../http/errors.ts';
import type { ClientConnections } from '../../ports/connections.ts';
import { RealtimeHolderRepository } from '../../store/realtime-connections.ts';
import { openRealtime, type RealtimeSession } from './connect.ts';
import { abandonRealtime, errorEvent, relayRealtime } from './relay.ts';

export const RELAY_PATHS = { connect: '/realtime/connect', message: '/realtime/message', disconnect: '/realtime/disconnect', health: '/health' } as const;
/** The header API Gateway's integrations fill from `context.connectionId`. */
export const CONNECTION_ID_HEADER = 'connectionid';
/** `$disconnect`'s close code (`context.disconnectStatusCode`). */
export const DISCONNECT_CODE_HEADER = 'x-gw-disconnect-code';
/** Set on a route forwarded to the holder, which never forwards it again. */
export const FORWARDED_HEADER = 'x-gw-relay-forwarded';

/** Headers of the integration's request that are not the client's upgrade headers. */
const NOT_UPGRADE = new Set([CONNECTION_ID_HEADER, DISCONNECT_CODE_HEADER, FORWARDED_HEADER, 'content-length', 'content-type', 'host', 'connection']);

export interface RelayServiceOptions {
  /** This task's address (`ip:port`) as the other tasks reach it. */
  address: string;
  /** The stage's `@connections` API. */
  connections: ClientConnections;
  /** API Gateway completes a connection only once `$connect` has answered: posts it refuses as gone are retried this long. */
  liveWithinMs?: number;
  /** The pin outlives API Gateway's 2-hour connection limit by this margin. */
  sessionTtlSeconds?: number;
  /** How long a forward to the holder may take before the holder counts as gone. */
  forwardTimeoutMs?: number;
  /** Reaches another task (fetch by default). */
  forward?: (url: string, init: RequestInit) => Promise<Response>;
}

const DEFAULTS = { liveWithinMs: 10_000, sessionTtlSeconds: 2 * 3600 + 600, forwardTimeoutMs: 5_000 };

/** A session this task holds. */
interface Held {
  session: RealtimeSession;
  client: ConnectionSocket;
  /** Both sides closed: the relay has logged the session and its hooks settle it. */
  ended: Promise<void>;
}

export class RelayService {
  readonly #deps: CoreDeps;
  readonly #opts: Required<Omit<RelayServiceOptions, 'forward'>> & Pick<RelayServiceOptions, 'forward'>;
  readonly #pins: RealtimeHolderRepository;
  readonly #held = new Map<string, Held>();
  #stopping = false;

  constructor(deps: CoreDeps, opts: RelayServiceOptions) {
    this.#deps = deps;
    this.#opts = { ...DEFAULTS, ...opts };
    this.#pins = new RealtimeHolderRepository(deps.repos.table);
  }

  /** Sessions whose provider socket this task holds. */
  get sessions(): number {
    return this.#held.size;
  }

  async handle(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    if (req.method === 'GET' && path === RELAY_PATHS.health) {
      // A stopping task answers 503 so that the load balancer sends it nothing new.
      return Response.json({ status: this.#stopping ? 'stopping' : 'ok', sessions: this.sessions }, { status: this.#stopping ? 503 : 200 });
    }
    if (req.method !== 'POST' || !Object.values(RELAY_PATHS).includes(path as never)) return refusal(new RouteNotFoundError(req.method, path));
    const connectionId = req.headers.get(CONNECTION_ID_HEADER);
    if (!connectionId) return refusal(ValidationError.field(CONNECTION_ID_HEADER, 'is required: API Gateway sets it from context.connectionId'));
    if (path === RELAY_PATHS.connect) return this.#connect(connectionId, req);
    const forwarded = req.headers.has(FORWARDED_HEADER);
    const held =
      path === RELAY_PATHS.message
        ? await this.#message(connectionId, Buffer.from(await req.arrayBuffer()), forwarded)
        : await this.#disconnect(connectionId, closeCode(req.headers.get(DISCONNECT_CODE_HEADER)), forwarded);
    // A route forwarded here for a session this task does not hold (it restarted at the same address): gone.
    return new Response(null, { status: forwarded && !held ? 410 : 200 });
  }

  /** `$connect`: authenticated, routed, admitted and the provider connected here, as the local upgrade; a refusal is the HTTP answer. */
  async #connect(connectionId: string, req: Request): Promise<Response> {
    if (this.#stopping) return refusal(new ServiceUnavailableError('This relay task is stopping', { retryAfterSeconds: 1 }));
    const opened = await openRealtime(upgradeRequest(req), this.#deps);
    if (opened instanceof Response) return opened;
    const client = new ConnectionSocket(connectionId, this.#opts.connections, this.#opts.liveWithinMs, this.#deps);
    const ended = new Promise<void>((resolve) => {
      let open = 2;
      const one = () => --open === 0 && resolve();
      client.once('close', one);
      opened.upstream.once('close', one);
    });
    const held: Held = { session: opened, client, ended };
    try {
      await this.#pins.put({
        connection_id: connectionId,
        holder: this.#opts.address,
        expires_at: Math.floor(this.#deps.clock.now() / 1000) + this.#opts.sessionTtlSeconds,
      });
    } catch (err) {
      // Unpinned, no other task could reach the session: it is not accepted (and logged as cancelled).
      abandonRealtime(opened);
      throw err;
    }
    this.#held.set(connectionId, held);
    void ended.then(() => this.#release(connectionId, held));
    relayRealtime(opened, client as unknown as WebSocket);
    const out = new Headers(opened.flight.out);
    if (opened.protocol) out.set('sec-websocket-protocol', opened.protocol);
    return new Response(null, { status: 200, headers: out });
  }

  /** True when this task holds the session. */
  async #message(connectionId: string, data: Buffer, forwarded: boolean): Promise<boolean> {
    const held = this.#held.get(connectionId);
    if (held) {
      held.client.deliver(data);
      return true;
    }
    if (!forwarded) await this.#toHolder(connectionId, RELAY_PATHS.message, data, {});
    return false;
  }

  async #disconnect(connectionId: string, code: number, forwarded: boolean): Promise<boolean> {
    const held = this.#held.get(connectionId);
    if (held) {
      held.client.ended(code);
      await held.ended;
      return true;
    }
    if (!forwarded) await this.#toHolder(connectionId, RELAY_PATHS.disconnect, undefined, { [DISCONNECT_CODE_HEADER]: String(code) });
    return false;
  }

  /**
   * A route for a session another task holds, sent on to it. No pin: the session has ended (or
   * never began), and the client is let go. A holder that cannot be reached has stopped: the client
   * is told with an `error` event and closed (its reservations were settled by the holder when it
   * stopped, or expire with it when it was killed).
   */
  async #toHolder(connectionId: string, path: string, body: Buffer | undefined, headers: Record<string, string>): Promise<void> {
    const pin = await this.#pins.get(connectionId);
    const connections = this.#opts.connections;
    if (!pin) {
      if (path === RELAY_PATHS.message) await connections.close(connectionId);
      return;
    }
    // A pin naming this task for a session it does not hold: a task that restarted at the same address lost it.
    if (pin.holder !== this.#opts.address && (await this.#forwarded(pin.holder, connectionId, path, body, headers))) return;
    if (!(await this.#pins.drop(connectionId, pin.holder))) return;
    this.#deps.logger.warn('realtime: the relay task holding a session is gone; ending it', { connectionId, holder: pin.holder });
    if (path !== RELAY_PATHS.message) return;
    const e = new UpstreamError(503, 'The relay task holding this session stopped; reconnect to start a new session');
    await connections.send(connectionId, Buffer.from(errorEvent(e, connectionId)), false);
    await connections.close(connectionId);
  }

  /** Whether the holder took the forwarded route. */
  async #forwarded(holder: string, connectionId: string, path: string, body: Buffer | undefined, headers: Record<string, string>): Promise<boolean> {
    const forward = this.#opts.forward ?? fetch;
    try {
      const res = await forward(`http://${holder}${path}`, {
        method: 'POST',
        headers: { ...headers, [CONNECTION_ID_HEADER]: connectionId, [FORWARDED_HEADER]: '1' },
        ...(body ? { body: new Uint8Array(body) } : {}),
        signal: AbortSignal.timeout(this.#opts.forwardTimeoutMs),
      });
      await res.body?.cancel();
      return res.ok;
    } catch {
      // Unreachable or timed out: the holder has stopped.
      return false;
    }
  }

  async #release(connectionId: string, held: Held): Promise<void> {
    if (this.#held.get(connectionId) === held) this.#held.delete(connectionId);
    try {
      await this.#pins.drop(connectionId, this.#opts.address);
    } catch (err) {
      this.#deps.logger.warn('realtime: dropping a session pin failed (its TTL removes it)', { connectionId, error: err });
    }
  }

  /**
   * The task is stopping (SIGTERM): no new session is taken, and every held session ends with an
   * `error` event and a close, so that its client reconnects (to another task); each is logged and
   * settled once, here. Resolves when every session has ended and the hooks have flushed.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    const held = [...this.#held.values()];
    const e = new ServiceUnavailableError('The relay task holding this session is stopping; reconnect to start a new session', { retryAfterSeconds: 1 });
    for (const { session, client } of held) {
      const record = session.flight.record;
      record.errorCode = e.openaiCode ?? e.code;
      record.errorMessage = e.message;
      client.send(errorEvent(e, record.id));
      client.close(1012);
    }
    await Promise.all(held.map((h) => h.ended));
    // The relay completes a session's record once both sides have closed, and the hooks run after it.
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all(this.#deps.gatewayHooks.map((h) => h.flush?.()));
  }
}

/**
 * The client's side of a held session as the local relay sees a `ws` socket: what the relay sends
 * is posted to `@connections` in order (its callback once posted, so that the relay's back-pressure
 * applies), the client's messages come from `$default`, and `$disconnect` is its close.
 */
class ConnectionSocket extends EventEmitter {
  readonly CONNECTING = 0;
  readonly OPEN = 1;
  readonly CLOSING = 2;
  readonly CLOSED = 3;
  readyState = 1;
  readonly #id: string;
  readonly #connections: ClientConnections;
  readonly #deps: CoreDeps;
  readonly #liveBy: number;
  /** API Gateway has the connection: a post went through, or the client sent a message. */
  #live = false;
  #posting: Promise<void> = Promise.resolve();
  #paused = false;
  readonly #inbox: Buffer[] = [];

  constructor(id: string, connections: ClientConnections, liveWithinMs: number, deps: CoreDeps) {
    super();
    this.#id = id;
    this.#connections = connections;
    this.#deps = deps;
    this.#liveBy = Date.now() + liveWithinMs;
  }

  send(data: Buffer | string, opts?: { binary?: boolean } | ((err?: Error) => void), cb?: (err?: Error) => void): void {
    const done = typeof opts === 'function' ? opts : cb;
    const binary = typeof opts === 'object' && opts.binary === true;
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    this.#posting = this.#posting
      .then(() => this.#post(bytes, binary))
      .catch((err: unknown) => {
        this.#deps.logger.warn('realtime: posting to the client failed; ending the session', { connectionId: this.#id, error: err });
        this.#closed(1011);
      })
      .finally(() => done?.());
  }

  /** One message, retried while API Gateway has not yet completed the connection. */
  async #post(data: Buffer, binary: boolean): Promise<void> {
    for (;;) {
      if (this.readyState === this.CLOSED) return;
      const sent = await this.#connections.send(this.#id, data, binary);
      if (sent === 'sent') {
        this.#live = true;
        return;
      }
      if (sent === 'too_large') return this.#tooLarge(data.length);
      if (this.#live || Date.now() >= this.#liveBy) return this.#closed(1001);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async #tooLarge(bytes: number): Promise<void> {
    const e = new UpstreamError(502, `The provider sent an event of ${bytes} bytes, above API Gateway's 128 KB message limit`);
    await this.#connections.send(this.#id, Buffer.from(errorEvent(e, this.#id)), false);
    await this.#connections.close(this.#id);
    this.#closed(1009);
  }

  /** Closes the client's connection once what was sent before has been posted. */
  close(code = 1000, _reason?: Buffer | string): void {
    if (this.readyState !== this.OPEN) return;
    this.readyState = this.CLOSING;
    this.#posting = this.#posting
      .then(() => this.#connections.close(this.#id))
      .catch((err: unknown) => this.#deps.logger.warn('realtime: closing the client connection failed', { connectionId: this.#id, error: err }))
      .finally(() => this.#closed(code));
  }

  terminate(): void {
    this.ended(1006);
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    while (!this.#paused && this.#inbox.length > 0) this.emit('message', this.#inbox.shift(), false);
  }

  /** A client message (`$default`). */
  deliver(data: Buffer): void {
    if (this.readyState !== this.OPEN) return;
    this.#live = true;
    if (this.#paused) this.#inbox.push(data);
    else this.emit('message', data, false);
  }

  /** The client's connection closed (`$disconnect`). */
  ended(code: number): void {
    this.#closed(code);
  }

  #closed(code: number): void {
    if (this.readyState === this.CLOSED) return;
    this.readyState = this.CLOSED;
    this.emit('close', code, Buffer.alloc(0));
  }
}

/** The upgrade as the core reads it: `GET /v1/realtime?...` with the client's headers. */
function upgradeRequest(req: Request): Request {
  const url = new URL(req.url);
  const headers = new Headers();
  req.headers.forEach((value, name) => {
    if (!NOT_UPGRADE.has(name)) headers.set(name, value);
  });
  return new Request(`https://${url.host}/v1/realtime${url.search}`, { method: 'GET', headers });
}

function closeCode(raw: string | null): number {
  const code = Number(raw);
  return Number.isInteger(code) && code >= 1000 && code <= 4999 ? code : 1005;
}

function refusal(e: GantryError): Response {
  return Response.json(toOpenAIBody(e), { status: e.status, headers: e.headers });
}
