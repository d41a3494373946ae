/**
 * The realtime relay behind API Gateway's WebSocket API, where no process holds the client's
 * socket: API Gateway invokes a function per event (`$connect`, each client message on `$default`,
 * `$disconnect`) and the function writes to the client through `@connections` (the
 * ClientConnections port).
 *
 * - `$connect` authenticates, resolves and admits the session exactly as the local upgrade does,
 *   without contacting the provider, and records the session (its upgrade request encrypted).
 * - `$default` forwards the client's message on the provider socket that this instance holds for
 *   the session, opening it first when it holds none (a first message, or another instance);
 *   provider events are posted to the client in order as they come, and the invocation waits until
 *   the provider is quiet (no response in progress) so that they are posted before it ends.
 * - `$disconnect` closes the provider socket and writes the session log from the figures every
 *   instance added to the session's item: usage summed and priced as the local relay does.
 * - Guardrail hooks (guard.ts) as locally: a client message passes the input hooks before it is
 *   sent on; provider events go through the output gate, and an invocation also waits for it.
 *
 * What it cannot do: keep a provider socket across instances, or post provider events while its
 * instance is frozen between invocations (they are posted on the next one): docs/realtime.md.
 */
import type WebSocket from 'ws';
import type { CoreDeps } from '../../deps.ts';
import { UpstreamError, asGantryError, type GantryError } from '../../http/errors.ts';
import type { ClientConnections } from '../../ports/connections.ts';
import { RealtimeConnectionRepository, zeroCounts, type RealtimeConnectionRecord, type SessionCounts } from '../../store/realtime-connections.ts';
import { connectUpstream, prepareRealtime, type PreparedRealtime } from './connect.ts';
import { maskFrame } from '../scrub.ts';
import type { OutputGate, RealtimeGuard } from './guard.ts';
import {
  addUsage,
  checkProgress,
  emptyUsage,
  errorEvent,
  finishSession,
  noteSessionUsage,
  responseDone,
  sendableCode,
  POLICY_CLOSE_CODE,
  type RealtimeUsage,
  type SessionSummary,
} from './relay.ts';

export interface ApiGatewayRelayOptions {
  /** A `$default` invocation ends once the provider has sent nothing for this long and no response is in progress. */
  quietMs?: number;
  /** ... or after this long, within API Gateway's 29-second integration timeout. */
  maxWaitMs?: number;
  /** The session item outlives API Gateway's 2-hour connection limit by this margin. */
  sessionTtlSeconds?: number;
}

const DEFAULTS = { quietMs: 300, maxWaitMs: 25_000, sessionTtlSeconds: 2 * 3600 + 600 };

/** A session as one instance holds it. */
interface Live {
  connectionId: string;
  prepared: PreparedRealtime;
  /** This instance admitted the session at `$connect`: its reservations are held here and settled at `$disconnect`. */
  admitted: boolean;
  upstream?: WebSocket;
  /** The guardrail hooks of the target connected to, and the gate of its output hooks. */
  guard?: RealtimeGuard;
  gate?: OutputGate;
  connections?: ClientConnections;
  /** Usage seen by this instance (limits' progress checks). */
  usage: RealtimeUsage;
  /** Figures not yet added to the session's item. */
  delta: Partial<SessionCounts>;
  provider?: string;
  openResponses: number;
  lastEventAt: number;
  /** Posts to the client, chained to keep their order. */
  posting: Promise<void>;
  closedBy?: SessionSummary['close'];
}

const RESPONSE_CREATED = '"response.created"';

const bump = (delta: Partial<SessionCounts>, name: keyof SessionCounts, n = 1) => {
  delta[name] = (delta[name] ?? 0) + n;
};

export class ApiGatewayRelay {
  readonly #deps: CoreDeps;
  readonly #sessions: RealtimeConnectionRepository;
  readonly #opts: Required<ApiGatewayRelayOptions>;
  readonly #live = new Map<string, Live>();

  constructor(deps: CoreDeps, opts: ApiGatewayRelayOptions = {}) {
    this.#deps = deps;
    this.#sessions = new RealtimeConnectionRepository(deps.repos.table);
    this.#opts = { ...DEFAULTS, ...opts };
  }

  /** `$connect`: 200 (with the subprotocol to accept) or the refusal, before any provider is contacted. */
  async connect(connectionId: string, req: Request): Promise<Response> {
    const prepared = await prepareRealtime(req, this.#deps);
    if (prepared instanceof Response) return prepared;
    const { flight: f } = prepared;
    // Later invocations rebuild the session from this request: same trace id, same credentials.
    const headers: Record<string, string> = Object.fromEntries(req.headers);
    headers['x-gw-trace-id'] = f.record.traceId;
    const now = this.#deps.clock.now();
    await this.#sessions.put({
      connection_id: connectionId,
      trace_id: f.record.traceId,
      log_id: f.record.id,
      started_at: f.record.startedAt,
      model: prepared.model,
      sealed_request: await this.#deps.cipher.encrypt(JSON.stringify({ url: req.url, headers }), sealContext(connectionId)),
      expires_at: Math.floor(now / 1000) + this.#opts.sessionTtlSeconds,
      counts: zeroCounts(),
    });
    f.record.status = 101;
    this.#live.set(connectionId, newLive(connectionId, prepared, true, now));
    const out = new Headers(f.out);
    if (prepared.protocol) out.set('sec-websocket-protocol', prepared.protocol);
    return new Response(null, { status: 200, headers: out });
  }

  /** `$default`: one client message on to the provider, and the provider's events back until it is quiet. */
  async message(connectionId: string, data: Uint8Array, binary: boolean, connections: ClientConnections): Promise<void> {
    const live = this.#live.get(connectionId) ?? (await this.#revive(connectionId, connections));
    if (!live) return;
    live.connections = connections;
    if (!live.upstream || live.upstream.readyState !== live.upstream.OPEN) {
      const opened = await this.#open(live);
      if (!opened) return;
    }
    bump(live.delta, 'from_client');
    live.lastEventAt = this.#deps.clock.now();
    const sent = await this.#checked(live, data, binary);
    if (sent) {
      live.upstream!.send(sent.data, { binary: sent.binary });
      await this.#whileBusy(live);
    }
    await live.posting;
    await this.#save(live);
  }

  /** A client message as the input hooks let it through; a denial is answered to the client instead. */
  async #checked(live: Live, data: Uint8Array, binary: boolean): Promise<{ data: Uint8Array; binary: boolean } | undefined> {
    const guard = live.guard;
    if (!guard?.checksInput) return { data, binary };
    const verdict = await guard.checkClient(Buffer.from(data), binary);
    if ('relay' in verdict) return { data: verdict.relay, binary: false };
    this.#toClient(live, Buffer.from(verdict.refuse), false);
    return undefined;
  }

  /** `$disconnect`: the provider's socket closed and the session logged with every instance's figures. */
  async disconnect(connectionId: string, code: number): Promise<void> {
    const live = this.#live.get(connectionId);
    this.#live.delete(connectionId);
    if (live) {
      live.closedBy ??= { code, by: 'client' };
      const up = live.upstream;
      if (up && (up.readyState === up.OPEN || up.readyState === up.CONNECTING)) up.close(sendableCode(code));
      await live.posting;
      await this.#save(live);
    }
    const item = await this.#sessions.take(connectionId);
    if (!item) return;
    const prepared = live?.admitted ? live.prepared : await this.#rebuild(item);
    if (!prepared) return;
    const f = prepared.flight;
    f.record.id = item.log_id;
    f.record.startedAt = item.started_at;
    f.record.status = 101;
    if (item.provider) f.record.provider = item.provider;
    const { usage, counts } = fromCounts(item.counts);
    noteSessionUsage(f.record, usage);
    // The guardrails' verdicts are those this instance saw (its record holds them when it admitted the session).
    finishSession(f, usage, counts, live?.closedBy ?? { code, by: 'client' }, live?.admitted ? live.guard?.summary : undefined);
  }

  /** A session this instance does not hold (another one took `$connect`): rebuilt from its item, not admitted again. */
  async #revive(connectionId: string, connections: ClientConnections): Promise<Live | undefined> {
    const item = await this.#sessions.get(connectionId);
    const prepared = item ? await this.#rebuild(item) : undefined;
    if (!prepared) {
      // Ended meanwhile (expired, or the key was revoked): the client is told and let go.
      await connections.close(connectionId);
      return undefined;
    }
    const live = newLive(connectionId, prepared, false, this.#deps.clock.now());
    this.#live.set(connectionId, live);
    return live;
  }

  async #rebuild(item: RealtimeConnectionRecord): Promise<PreparedRealtime | undefined> {
    const { url, headers } = JSON.parse(await this.#deps.cipher.decrypt(item.sealed_request, sealContext(item.connection_id))) as {
      url: string;
      headers: Record<string, string>;
    };
    const prepared = await prepareRealtime(new Request(url, { headers }), this.#deps, { admit: false });
    return prepared instanceof Response ? undefined : prepared;
  }

  /** Opens the provider's socket (routing and fallback as at the local upgrade); a failure ends the session with an `error` event. */
  async #open(live: Live): Promise<boolean> {
    try {
      const { upstream, guard, secrets } = await connectUpstream(live.prepared);
      live.upstream = upstream;
      live.guard = guard;
      if (guard?.checksOutput) {
        live.gate = guard.outputGate({
          toClient: (data, binary) => this.#toClient(live, data, binary),
          toProvider: (event) => upstream.readyState === upstream.OPEN && upstream.send(event),
        });
      }
      live.provider = live.prepared.flight.record.provider;
      upstream.on('message', (data: Buffer, binary: boolean) => this.#fromProvider(live, maskFrame(secrets, data), binary));
      upstream.once('close', (code: number) => {
        live.closedBy ??= { code, by: 'provider' };
        live.gate?.end();
        const held = live.gate?.settled();
        this.#post(live, async () => {
          await held;
          await live.connections?.close(live.connectionId);
        });
      });
      upstream.on('error', () => upstream.terminate());
      upstream.resume();
      return true;
    } catch (err) {
      await this.#end(live, asGantryError(err), 1011);
      return false;
    }
  }

  #fromProvider(live: Live, data: Buffer, binary: boolean): void {
    live.lastEventAt = this.#deps.clock.now();
    bump(live.delta, 'from_provider');
    if (!binary) this.#meter(live, data);
    if (live.gate) live.gate.push(data, binary);
    else this.#toClient(live, data, binary);
  }

  /** Posts one message to the client, after those before it. */
  #toClient(live: Live, data: Buffer, binary: boolean): void {
    const connections = live.connections;
    this.#post(live, async () => {
      const sent = await connections?.send(live.connectionId, data, binary);
      if (sent === 'gone') live.upstream?.close(1001);
      if (sent === 'too_large')
        await this.#end(live, new UpstreamError(502, `The provider sent an event of ${data.length} bytes, above API Gateway's 128 KB message limit`), 1009);
    });
  }

  /**
   * Queues a step after the posts before it. A step that fails (the @connections endpoint refused or
   * timed out) is logged and the provider's socket closed: the chain itself never rejects, as nothing
   * may be left to await it when the provider's events outlive the invocation.
   */
  #post(live: Live, step: () => Promise<unknown> | undefined): void {
    live.posting = live.posting.then(step).then(
      () => undefined,
      (err: unknown) => {
        this.#deps.logger.warn('realtime: posting to the client failed; closing the provider socket', { connectionId: live.connectionId, error: err });
        live.upstream?.close(1011);
      },
    );
  }

  /** Responses in progress, and `response.done` usage (summed, and checked against limits where admitted). */
  #meter(live: Live, data: Buffer): void {
    if (data.indexOf(RESPONSE_CREATED) !== -1) live.openResponses++;
    const done = responseDone(data);
    if (!done) return;
    live.openResponses = Math.max(0, live.openResponses - 1);
    bump(live.delta, 'responses');
    const u = done.usage;
    if (!u) return;
    const one = emptyUsage();
    addUsage(one, u);
    addUsage(live.usage, u);
    addDelta(live.delta, one);
    if (!live.admitted) return;
    noteSessionUsage(live.prepared.flight.record, live.usage);
    const progress = checkProgress(live.prepared.flight, (e) => void this.#end(live, e, POLICY_CLOSE_CODE));
    this.#post(live, () => progress);
  }

  /** Tells the client why in an `error` event, then closes both sides. */
  async #end(live: Live, e: GantryError, code: number): Promise<void> {
    live.closedBy ??= { code, by: 'gateway' };
    const f = live.prepared.flight;
    f.record.errorCode = e.openaiCode ?? e.code;
    f.record.errorMessage = e.message;
    await live.connections?.send(live.connectionId, Buffer.from(errorEvent(e, f.record.id)), false);
    await live.connections?.close(live.connectionId);
    if (live.upstream?.readyState === live.upstream?.OPEN) live.upstream?.close(1000);
  }

  /** Until the provider is quiet with no response in progress and nothing held by the gate, closed, or the invocation's time is up. */
  async #whileBusy(live: Live): Promise<void> {
    const { quietMs, maxWaitMs } = this.#opts;
    const started = Date.now();
    for (;;) {
      const idle = Date.now() - Math.max(live.lastEventAt, started);
      const open = live.upstream?.readyState === live.upstream?.OPEN;
      const held = live.gate !== undefined && !live.gate.idle;
      if (!open || (live.openResponses === 0 && idle >= quietMs && !held) || Date.now() - started >= maxWaitMs) return;
      await new Promise((r) => setTimeout(r, Math.max(10, Math.min(quietMs - idle, maxWaitMs - (Date.now() - started)))));
    }
  }

  async #save(live: Live): Promise<void> {
    const delta = live.delta;
    live.delta = {};
    await this.#sessions.add(live.connectionId, delta, live.provider);
  }
}

function newLive(connectionId: string, prepared: PreparedRealtime, admitted: boolean, now: number): Live {
  return { connectionId, prepared, admitted, usage: emptyUsage(), delta: {}, openResponses: 0, lastEventAt: now, posting: Promise.resolve() };
}

/** The cipher's context binds a sealed request to its connection. */
const sealContext = (connectionId: string) => ({ realtime_connection: connectionId });

/** One `response.done`'s usage, as counters. */
function addDelta(delta: Partial<SessionCounts>, u: RealtimeUsage): void {
  bump(delta, 'total_tokens', u.total_tokens);
  bump(delta, 'input_tokens', u.input_tokens);
  bump(delta, 'output_tokens', u.output_tokens);
  bump(delta, 'input_text_tokens', u.input_token_details.text_tokens);
  bump(delta, 'input_audio_tokens', u.input_token_details.audio_tokens);
  bump(delta, 'input_cached_tokens', u.input_token_details.cached_tokens);
  bump(delta, 'output_text_tokens', u.output_token_details.text_tokens);
  bump(delta, 'output_audio_tokens', u.output_token_details.audio_tokens);
}

function fromCounts(c: SessionCounts): { usage: RealtimeUsage; counts: { from_client: number; from_provider: number; responses: number } } {
  return {
    usage: {
      total_tokens: c.total_tokens,
      input_tokens: c.input_tokens,
      output_tokens: c.output_tokens,
      input_token_details: { text_tokens: c.input_text_tokens, audio_tokens: c.input_audio_tokens, cached_tokens: c.input_cached_tokens },
      output_token_details: { text_tokens: c.output_text_tokens, audio_tokens: c.output_audio_tokens },
    },
    counts: { from_client: c.from_client, from_provider: c.from_provider, responses: c.responses },
  };
}
