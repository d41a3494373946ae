/**
 * The realtime relay: every message goes on in both directions, in order and unchanged (text and
 * binary frames), with back-pressure (a side whose peer has too much unsent is paused until it has
 * written it). Closing either side closes the other with the same code where the protocol allows.
 * Usage from the provider's `response.done` events is summed per session; after each one the
 * hooks' `progress` (limits) may end the session with an `error` event. A session whose target has
 * guardrail hooks sends client events through its guard's input check and provider events through
 * its output gate (guard.ts), still in order. When both sides are closed the session's record is
 * completed: priced, settled and logged like any request.
 */
import type WebSocket from 'ws';
import type { GantryError } from '../../http/errors.ts';
import type { Flight } from '../flight.ts';
import type { GatewayRecord } from '../../kernel/lifecycle.ts';
import type { RealtimeSession } from './connect.ts';
import { maskFrame } from '../scrub.ts';
import type { GuardSummary, OutputGate, RealtimeGuard } from './guard.ts';

/** Unsent bytes towards one side above which the other side is paused, and below which it resumes. */
const HIGH_WATER_BYTES = 1 << 20;
const LOW_WATER_BYTES = 256 << 10;

/** Close code sent when the gateway ends a session on a policy (a budget reached). */
export const POLICY_CLOSE_CODE = 1008;

/** OpenAI's realtime usage, as `response.done` reports it. */
export interface RealtimeUsage {
  total_tokens: number;
  input_tokens: number;
  output_tokens: number;
  input_token_details: { text_tokens: number; audio_tokens: number; cached_tokens: number };
  output_token_details: { text_tokens: number; audio_tokens: number };
}

/** What a session did, as its log's response shows. */
export interface SessionSummary {
  object: 'realtime.session';
  model: string | undefined;
  duration_ms: number;
  messages: { from_client: number; from_provider: number };
  responses: number;
  usage: RealtimeUsage;
  close: { code: number; by: 'client' | 'provider' | 'gateway' } | undefined;
  /** Sessions with guardrail hooks: the client events denied and the responses stopped. */
  guardrails?: GuardSummary;
}

export const emptyUsage = (): RealtimeUsage => ({
  total_tokens: 0,
  input_tokens: 0,
  output_tokens: 0,
  input_token_details: { text_tokens: 0, audio_tokens: 0, cached_tokens: 0 },
  output_token_details: { text_tokens: 0, audio_tokens: 0 },
});

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);

/** Adds one `response.done` usage to the session's sum. */
export function addUsage(sum: RealtimeUsage, u: Record<string, unknown>): void {
  const inD = (u.input_token_details ?? {}) as Record<string, unknown>;
  const outD = (u.output_token_details ?? {}) as Record<string, unknown>;
  sum.input_tokens += num(u.input_tokens);
  sum.output_tokens += num(u.output_tokens);
  sum.total_tokens += num(u.total_tokens) || num(u.input_tokens) + num(u.output_tokens);
  sum.input_token_details.text_tokens += num(inD.text_tokens);
  sum.input_token_details.audio_tokens += num(inD.audio_tokens);
  sum.input_token_details.cached_tokens += num(inD.cached_tokens);
  sum.output_token_details.text_tokens += num(outD.text_tokens);
  sum.output_token_details.audio_tokens += num(outD.audio_tokens);
}

/** The close codes a peer may be sent: 1005/1006/1015 describe a close, they are never sent. */
export function sendableCode(code: number): number {
  if (code === 1006 || code === 1015) return 1011;
  if ((code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005) || (code >= 3000 && code <= 4999)) return code;
  return 1000;
}

const RESPONSE_DONE = '"response.done"';

/**
 * A provider message that is a `response.done` event, with its usage when it reports one; only a
 * message that can be one is parsed, so audio deltas pass untouched.
 */
export function responseDone(data: Buffer): { usage: Record<string, unknown> | undefined } | undefined {
  if (data.indexOf(RESPONSE_DONE) === -1) return undefined;
  let event: { type?: unknown; response?: { usage?: unknown } };
  try {
    event = JSON.parse(data.toString('utf8')) as typeof event;
  } catch {
    return undefined;
  }
  if (event.type !== 'response.done') return undefined;
  const u = event.response?.usage;
  return { usage: u && typeof u === 'object' ? (u as Record<string, unknown>) : undefined };
}

/** The `error` event, in OpenAI's realtime shape, by which the gateway tells a client why it ends a session. */
export function errorEvent(e: GantryError, recordId: string): string {
  const error = { type: e.type, code: e.openaiCode ?? e.code, message: e.message, param: null, event_id: null };
  return JSON.stringify({ type: 'error', event_id: `event_gw_${recordId}`, error });
}

export function relayRealtime(session: RealtimeSession, client: WebSocket): void {
  const { flight: f, upstream, guard } = session;
  const usage = emptyUsage();
  const counts = { from_client: 0, from_provider: 0, responses: 0 };
  let closedBy: SessionSummary['close'];
  let checks: Promise<void> = Promise.resolve();
  const isOpen = (ws: WebSocket) => ws.readyState === ws.OPEN;

  const onProvider = (data: Buffer) => {
    const done = responseDone(data);
    if (!done) return;
    counts.responses++;
    if (done.usage) addUsage(usage, done.usage);
    noteSessionUsage(f.record, usage);
    checks = checks.then(() => checkProgress(f, (e) => endOnPolicy(e)));
  };

  const endOnPolicy = (e: GantryError) => {
    closedBy ??= { code: POLICY_CLOSE_CODE, by: 'gateway' };
    f.record.errorCode = e.openaiCode ?? e.code;
    f.record.errorMessage = e.message;
    if (isOpen(client)) {
      client.send(errorEvent(e, f.record.id));
      client.close(POLICY_CLOSE_CODE, 'budget exhausted');
    }
    if (isOpen(upstream)) upstream.close(1000);
  };

  let gate: OutputGate | undefined;
  // Held provider events do not pause the provider: the text that lets them go is still to come.
  const gated = (send: Send): Lane => {
    const g = (gate = guard!.outputGate({ toClient: send, toProvider: (event) => isOpen(upstream) && upstream.send(event) }));
    return { push: (data, binary) => g.push(data, binary), held: () => 0 };
  };
  pipe(client, upstream, () => counts.from_client++, guard?.checksInput ? checkedLane(f, guard, client) : undefined);
  pipe(
    upstream,
    client,
    (data, binary) => {
      counts.from_provider++;
      if (!binary) onProvider(data);
    },
    guard?.checksOutput ? gated : undefined,
    (data) => maskFrame(session.secrets, data),
  );

  let open = 2;
  const closed = (by: 'client' | 'provider', other: WebSocket) => (code: number, reason: Buffer) => {
    closedBy ??= { code, by };
    const close = () => {
      if (other.readyState === other.OPEN || other.readyState === other.CONNECTING) other.close(sendableCode(code), reason);
    };
    // What the gate holds is checked and passed on before the client is let go.
    if (by === 'provider' && gate) {
      gate.end();
      void gate.settled().then(close);
    } else close();
    if (--open === 0) void checks.then(() => finishSession(f, usage, counts, closedBy, guard?.summary));
  };
  client.once('close', closed('client', upstream));
  upstream.once('close', closed('provider', client));
  // 'close' follows every 'error'; the cause of a failed side is not the client's to see.
  client.on('error', () => client.terminate());
  upstream.on('error', () => upstream.terminate());
  upstream.resume();
}

type Send = (data: Buffer, binary: boolean) => void;

/** What stands between the two sides of a pipe (a guard): takes each message, sends on what it lets through. */
interface Lane {
  push(data: Buffer, binary: boolean): void;
  /** Bytes taken and not yet sent on or dropped (counted towards back-pressure). */
  held(): number;
}

/**
 * Forwards `from`'s messages to `to` (through `lane` when given), pausing `from` while too much is
 * unsent towards `to` or held by the lane.
 */
function pipe(from: WebSocket, to: WebSocket, seen: Send, lane?: (send: Send, drained: () => void) => Lane, mask: (data: Buffer) => Buffer = (d) => d): void {
  let unsent = 0;
  let paused = false;
  const pending = () => unsent + (through?.held() ?? 0);
  const relieve = () => {
    if (paused && pending() <= LOW_WATER_BYTES) {
      paused = false;
      from.resume();
    }
  };
  const send: Send = (data, binary) => {
    if (to.readyState !== to.OPEN) return;
    unsent += data.length;
    to.send(data, { binary }, () => {
      unsent -= data.length;
      relieve();
    });
  };
  const through = lane?.(send, relieve);
  from.on('message', (raw: Buffer, binary: boolean) => {
    const data = mask(raw);
    seen(data, binary);
    if (through) through.push(data, binary);
    else send(data, binary);
    if (!paused && pending() > HIGH_WATER_BYTES) {
      paused = true;
      from.pause();
    }
  });
}

/**
 * Client events through the input hooks, one after the other so their order holds: what passes
 * is sent on, a denial is answered to the client. What waits for a check counts as held.
 */
function checkedLane(f: Flight, guard: RealtimeGuard, client: WebSocket) {
  return (send: Send, drained: () => void): Lane => {
    let held = 0;
    let chain: Promise<void> = Promise.resolve();
    const answer = (event: string) => client.readyState === client.OPEN && client.send(event);
    return {
      held: () => held,
      push(data, binary) {
        held += data.length;
        chain = chain
          .then(async () => {
            const verdict = await guard.checkClient(data, binary);
            if ('relay' in verdict) send(verdict.relay, false);
            else answer(verdict.refuse);
          })
          .catch((err: unknown) => {
            // Unchecked text is never sent on.
            f.deps.logger.error('realtime: checking a client event failed', { error: err });
            answer(guard.errorEvent('hooks_failed', 'The event could not be checked by the guardrail hooks', null));
          })
          .finally(() => {
            held -= data.length;
            drained();
          });
      },
    };
  };
}

export function noteSessionUsage(record: GatewayRecord, u: RealtimeUsage): void {
  record.usage = {
    prompt_tokens: u.input_tokens,
    completion_tokens: u.output_tokens,
    total_tokens: u.total_tokens,
    cached_tokens: u.input_token_details.cached_tokens,
  };
}

/** Asks every hook with `progress` about the session so far; the first refusal ends it. */
export async function checkProgress(f: Flight, end: (e: GantryError) => void): Promise<void> {
  for (const hook of f.deps.gatewayHooks) {
    if (!hook.progress) continue;
    try {
      const refusal = await hook.progress(f.record);
      if (refusal) return end(refusal);
    } catch (err) {
      f.deps.logger.error(`${hook.name} progress failed`, { error: err });
    }
  }
}

/** The client left before its upgrade was accepted: the provider's socket is closed, the session logged. */
export function abandonRealtime(session: RealtimeSession): void {
  session.upstream.close(1001);
  session.flight.record.cancelled = true;
  finishSession(session.flight, emptyUsage(), { from_client: 0, from_provider: 0, responses: 0 }, { code: 1001, by: 'client' });
}

export function finishSession(
  f: Flight,
  usage: RealtimeUsage,
  counts: { from_client: number; from_provider: number; responses: number },
  close: SessionSummary['close'],
  guardrails?: GuardSummary,
): void {
  const { record, deps } = f;
  record.endedAt = deps.clock.now();
  const summary: SessionSummary = {
    object: 'realtime.session',
    model: record.model,
    duration_ms: Math.max(0, record.endedAt - record.startedAt),
    messages: { from_client: counts.from_client, from_provider: counts.from_provider },
    responses: counts.responses,
    usage,
    close,
  };
  if (guardrails) summary.guardrails = { ...guardrails };
  record.response = summary;
  f.done();
}
