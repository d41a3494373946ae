/**
 * Guardrail hooks on a realtime session, for both relays (relay.ts, apigw-relay.ts); imported only
 * by sessions whose target has hooks. The hooks are those of the target the session connected to:
 * its lists and saved guardrails, resolved as for HTTP requests.
 *
 * - Client events: the text the model will read (guardrails/realtime-text.ts) passes the input
 *   hooks before the event is sent on, re-serialised, so the provider reads what was checked. A
 *   denied event is not sent: the client gets an `error` event and the session goes on.
 * - Provider events: the events of a response go through the window gate (window-gate.ts) in order,
 *   so none leaves before the model's text up to its end passed the output hooks. A denial sends
 *   the client an `error` event, cancels the response, deletes its items, and drops or rewrites the
 *   rest of its events so that no denied text leaves (`response.done` says `incomplete`).
 *
 * Audio is not text: it is relayed unchecked, held in order behind the text before it.
 */
import { ValidationError } from '../../http/errors.ts';
import { createCheckDeps } from '../../guardrails/check-deps.ts';
import type { CheckContext, GuardrailEvent, HookOutcome } from '../../kernel/guardrails.ts';
import type { HookSpec, StreamWindow } from '../../guardrails/hooks.ts';
import { clientEventParts, isModelItem, joinParts, ModelTextTracker } from '../../guardrails/realtime-text.ts';
import { findCheck } from '../../guardrails/registry.ts';
import { runHooks, type HooksRun, type RunnerDeps } from '../../guardrails/runner.ts';
import type { TextPart, TextScope } from '../../guardrails/text.ts';
import { gateStream, type Piece } from '../../guardrails/window-gate.ts';
import type { GatewayPrincipal } from '../access.ts';
import { targetHooks, type TargetHooks } from '../target-hooks.ts';
import type { Flight } from '../flight.ts';
import type { HookResults } from '../../kernel/lifecycle.ts';
import type { ConfigNode, ResolvedTarget } from '../../kernel/routing.ts';
import { hookCheckProblems } from '../guard.ts';

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Ids of the gateway's own events to the provider: the provider's answers to them are not relayed. */
const GW_EVENT_PREFIX = 'event_gw_';

/** Hook outcomes kept in a session's record per list (failures up to twice as many): a session may check thousands of events. */
const MAX_NOTED = 100;

// ---- The hooks of the session's target -------------------------------------------------------

export type RealtimeHooks = TargetHooks;

/** A config's hooks name checks that exist, with valid parameters (as for HTTP requests): 400 naming each problem's path otherwise. */
export function checkHookConfig(config: ConfigNode): void {
  const problems = hookCheckProblems(config);
  if (problems.length > 0) throw new ValidationError(problems, { param: 'x-gw-config', openaiCode: 'AB01' });
}

/** The guard of a session whose target has hooks; undefined when it has none. */
export async function realtimeGuard(f: Flight, principal: GatewayPrincipal, target: ResolvedTarget): Promise<RealtimeGuard | undefined> {
  const hooks = await targetHooks(f, principal, target);
  if (hooks.before.length === 0 && hooks.after.length === 0) return undefined;
  return new RealtimeGuard(f, target, hooks);
}

// ---- The guard -------------------------------------------------------------------------------

/** A client message: sent on as `relay`, or refused with the `error` event to send the client instead. */
export type ClientVerdict = { relay: Buffer } | { refuse: string };

/** What the session's summary (its log's response) says of the guardrails. */
export interface GuardSummary {
  client_events_denied: number;
  responses_stopped: number;
}

const deniedIds = (outcomes: readonly HookOutcome[]): string[] => outcomes.filter((o) => !o.verdict && o.deny).map((o) => o.id);

const withoutData = (o: HookOutcome): HookOutcome => ({ ...o, checks: o.checks.map((c) => ({ ...c, data: null })) });

/** What the log and the answer need of one or more runs. */
type Verdicts = Pick<HooksRun, 'outcomes' | 'denied' | 'later'>;

export class RealtimeGuard {
  readonly summary: GuardSummary = { client_events_denied: 0, responses_stopped: 0 };
  readonly #f: Flight;
  readonly #target: ResolvedTarget;
  readonly #hooks: RealtimeHooks;
  readonly #runner: RunnerDeps;
  #sent = 0;

  constructor(f: Flight, target: ResolvedTarget, hooks: RealtimeHooks) {
    this.#f = f;
    this.#target = target;
    this.#hooks = hooks;
    this.#runner = { find: findCheck, check: createCheckDeps(f.deps.upstream, f.deps.trustedHosts, f.deps.clock) };
  }

  /** Client events pass input hooks. */
  get checksInput(): boolean {
    return this.#hooks.before.length > 0;
  }

  /** Provider events pass output hooks. */
  get checksOutput(): boolean {
    return this.#hooks.after.length > 0;
  }

  /**
   * A client message through the input hooks. Only JSON events are sent on (re-serialised: a
   * provider that reads a duplicate key or a lenient form differently still reads what was
   * checked); a binary frame or text that is not a JSON object cannot be checked and is refused.
   */
  async checkClient(data: Buffer, binary: boolean): Promise<ClientVerdict> {
    if (binary)
      return {
        refuse: this.errorEvent(
          'invalid_event',
          'This session has input guardrails: binary frames cannot be checked and are not relayed; send JSON events',
          null,
        ),
      };
    let event: unknown;
    try {
      event = JSON.parse(data.toString('utf8'));
    } catch {
      event = undefined;
    }
    if (!isRecord(event)) return { refuse: this.errorEvent('invalid_event', 'The event is not a JSON object', null) };
    const relay = Buffer.from(JSON.stringify(event));
    if (clientEventParts(event).length === 0) return { relay };
    const run = await this.#checkInput(event);
    this.note('before_request_hooks', run);
    if (!run.denied) return { relay };
    this.summary.client_events_denied++;
    const message = `The event was denied by a guardrail hook: ${deniedIds(run.outcomes).join(', ')}`;
    this.#denied('client', message);
    const results: HookResults = { before_request_hooks: run.outcomes, after_request_hooks: [] };
    return { refuse: this.errorEvent('hooks_failed', message, typeof event.event_id === 'string' ? event.event_id : null, results) };
  }

  /** The provider's events towards the client, through the output hooks' window gate. */
  outputGate(io: OutputIO): OutputGate {
    return new OutputGate(this, io);
  }

  /**
   * Runs the input hooks on a client event, each on the texts of its scope (the runner cannot find
   * a realtime event's texts by itself); a scope the event has no text in is not run. The event
   * is never rewritten, so no outcome claims a transformation.
   */
  async #checkInput(event: Json): Promise<Verdicts> {
    const byScope = new Map<TextScope, HookSpec[]>();
    for (const h of this.#hooks.before) byScope.set(h.scope, [...(byScope.get(h.scope) ?? []), h]);
    const json = { model: this.#f.record.model, ...event };
    const runs = await Promise.all(
      [...byScope].map(([scope, hooks]) => {
        const parts = clientEventParts(event, scope);
        return parts.length === 0 ? undefined : runHooks(hooks, this.#context('beforeRequestHook', json, parts, scope), this.#runner, { applies: false });
      }),
    );
    const done = runs.filter((r): r is HooksRun => r !== undefined);
    const later = done.flatMap((r) => (r.later ? [r.later] : []));
    return {
      outcomes: done.flatMap((r) => r.outcomes),
      denied: done.some((r) => r.denied),
      later: later.length > 0 ? Promise.all(later).then((all) => all.flat()) : undefined,
    };
  }

  /** Runs the output hooks on one window of the model's text (already sent text is never rewritten). */
  checkOutput(text: string): Promise<HooksRun> {
    const ctx = { ...this.#context('afterRequestHook', { model: this.#f.record.model }, [], 'all'), response: { json: null, text, statusCode: 200 } };
    return runHooks(this.#hooks.after, ctx, this.#runner, { applies: false });
  }

  /** One gate for all the output hooks: the smallest window, the largest context. */
  get window(): StreamWindow {
    const after = this.#hooks.after;
    return { size: Math.min(...after.map((h) => h.window.size)), context: Math.max(...after.map((h) => h.window.context)) };
  }

  /** A response stopped by the output hooks: counted, recorded and logged. */
  stopped(run: HooksRun | undefined): string {
    this.summary.responses_stopped++;
    const message = run
      ? `The response was stopped by a guardrail hook: ${deniedIds(run.outcomes).join(', ')}`
      : 'The response was stopped: its guardrail check failed';
    this.#denied('provider', message);
    return message;
  }

  /** An event id of the gateway's own (short: it is sent to the provider too). */
  eventId(): string {
    return `${GW_EVENT_PREFIX}${this.#f.record.id.slice(0, 8)}_${++this.#sent}`;
  }

  /** An `error` event in OpenAI's realtime shape; `clientEventId` names the client event it answers. */
  errorEvent(code: string, message: string, clientEventId: string | null, results?: HookResults): string {
    const error = { type: 'invalid_request_error', code, message, param: null, event_id: clientEventId };
    return JSON.stringify({ type: 'error', event_id: this.eventId(), error, ...(results ? { hook_results: results } : {}) });
  }

  /** Outcomes into the session's record (its log), bounded; async hooks' outcomes join once they finish. */
  note(key: keyof HookResults, run: Verdicts, extra?: Partial<HookOutcome>): void {
    const list = (this.#f.record.hookResults ??= { before_request_hooks: [], after_request_hooks: [] })[key];
    const add = (outcomes: readonly HookOutcome[]) => {
      for (const o of outcomes) if (list.length < MAX_NOTED || (!o.verdict && list.length < 2 * MAX_NOTED)) list.push(extra ? { ...o, ...extra } : o);
    };
    add(run.outcomes);
    run.later?.then(add, () => undefined);
  }

  #context(event: GuardrailEvent, json: Json, parts: readonly TextPart[], scope: TextScope): CheckContext {
    const { record } = this.#f;
    const request = { json, text: joinParts(parts), parts, scope, isStreamingRequest: true };
    return { event, requestType: 'realtime', provider: this.#target.provider, metadata: record.metadata, request };
  }

  #denied(direction: 'client' | 'provider', message: string): void {
    const { record, deps } = this.#f;
    record.errorCode = 'hooks_failed';
    record.errorMessage = message;
    deps.logger.warn('realtime: a guardrail hook denied', { traceId: record.traceId, logId: record.id, direction, message });
  }
}

// ---- The output gate -------------------------------------------------------------------------

export interface OutputIO {
  /** Passes an event on to the client (in order). */
  toClient(data: Buffer, binary: boolean): void;
  /** Sends one of the gateway's own events to the provider. */
  toProvider(event: string): void;
}

/** One provider message, parsed, with the model text it adds. */
interface Ev {
  data: Buffer;
  binary: boolean;
  event: Json | undefined;
  text: string;
}

/**
 * The events from a `response.created` until every response it opened is done (or one event with
 * model text outside any response): checked together, stopped together.
 */
class Segment {
  /** Not yet read by the gate. */
  readonly queue: Ev[] = [];
  /** Not yet passed on (released or scrubbed). */
  readonly items: Ev[] = [];
  readonly responses = new Set<string>();
  readonly outputItems = new Set<string>();
  open = 0;
  queued = false;
  denied = false;
  #ended = false;
  #wake: (() => void) | undefined;

  add(ev: Ev): void {
    this.queue.push(ev);
    this.items.push(ev);
    this.#poke();
  }

  /** No more events for the gate (the segment ended, or it was stopped). */
  end(): void {
    this.#ended = true;
    this.#poke();
  }

  async *pieces(): AsyncGenerator<Piece<Ev>> {
    for (;;) {
      const ev = this.queue.shift();
      if (ev) {
        yield { text: ev.text, payload: ev };
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #poke(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

/**
 * The provider's events in order, each passed on once the model text up to its end passed the
 * output hooks. Events that add no text go straight on when nothing is held before them, so audio
 * after checked text is not delayed; while text is being checked, everything after it waits.
 */
export class OutputGate {
  readonly #guard: RealtimeGuard;
  readonly #io: OutputIO;
  readonly #tracker = new ModelTextTracker();
  readonly #units: Array<Ev | Segment> = [];
  /** Items the gateway deleted: the provider's `conversation.item.deleted` for them is not relayed. */
  readonly #deleted = new Set<string>();
  readonly #idle: Array<() => void> = [];
  #current: Segment | undefined;
  #running = false;

  constructor(guard: RealtimeGuard, io: OutputIO) {
    this.#guard = guard;
    this.#io = io;
  }

  /** Nothing is held or being checked. */
  get idle(): boolean {
    return this.#units.length === 0;
  }

  push(data: Buffer, binary: boolean): void {
    const ev = this.#read(data, binary);
    if (ev.event && this.#ownAnswer(ev.event)) return;
    let seg = this.#current;
    if (!seg && ev.event?.type === 'response.created') seg = this.#current = new Segment();
    const single = !seg && ev.text !== '';
    if (single) seg = new Segment();
    if (seg) this.#track(seg, ev);
    if (seg?.denied) this.#scrubbed(seg, ev);
    else if (ev.text === '' && this.#nothingHeld()) this.#pass(ev);
    else if (seg) {
      seg.add(ev);
      if (!seg.queued) {
        seg.queued = true;
        this.#enqueue(seg);
      }
    } else this.#enqueue(ev);
    if (seg && (single || seg.open === 0)) {
      seg.end();
      if (seg === this.#current) this.#current = undefined;
      this.#tracker.reset();
    }
  }

  /** The provider closed: what is held is checked and passed on (or stopped). */
  end(): void {
    this.#current?.end();
    this.#current = undefined;
  }

  /** Resolves once nothing is held or being checked. */
  settled(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #read(data: Buffer, binary: boolean): Ev {
    if (binary) return { data, binary, event: undefined, text: '' };
    let event: unknown;
    try {
      event = JSON.parse(data.toString('utf8'));
    } catch {
      return { data, binary, event: undefined, text: '' };
    }
    if (!isRecord(event)) return { data, binary, event: undefined, text: '' };
    return { data, binary, event, text: this.#tracker.added(event) };
  }

  /** The provider's answer to one of the gateway's own events (a cancel of a finished response, a deletion). */
  #ownAnswer(event: Json): boolean {
    if (event.type === 'error') return isRecord(event.error) && str(event.error.event_id).startsWith(GW_EVENT_PREFIX);
    if (event.type === 'conversation.item.deleted') return this.#deleted.delete(str(event.item_id));
    return false;
  }

  /** Responses a segment opened and closed, and the items they wrote. */
  #track(seg: Segment, ev: Ev): void {
    const e = ev.event;
    if (!e) return;
    const type = str(e.type);
    const response = isRecord(e.response) ? str(e.response.id) : '';
    if (type === 'response.created') seg.open++;
    if (type === 'response.done') seg.open = Math.max(0, seg.open - 1);
    const responseId = response || str(e.response_id);
    if (responseId) seg.responses.add(responseId);
    const itemId = str(e.item_id) || (isRecord(e.item) ? str(e.item.id) : '');
    if (itemId && type.startsWith('response.')) seg.outputItems.add(itemId);
  }

  /** No unit waits, or only the segment being gated, with all its events passed on. */
  #nothingHeld(): boolean {
    const head = this.#units[0];
    return head === undefined || (this.#units.length === 1 && head instanceof Segment && head.items.length === 0);
  }

  #enqueue(unit: Ev | Segment): void {
    this.#units.push(unit);
    if (!this.#running) void this.#drain();
  }

  async #drain(): Promise<void> {
    this.#running = true;
    try {
      while (this.#units.length > 0) {
        const unit = this.#units[0]!;
        if (unit instanceof Segment) await this.#gate(unit);
        else this.#pass(unit);
        this.#units.shift();
      }
    } finally {
      this.#running = false;
      for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  async #gate(seg: Segment): Promise<void> {
    /** The first run that failed (a denial over a flag), else the last: what the log shows of this response. */
    let shown: { run: HooksRun; index: number } | undefined;
    const check = async (text: string, index: number) => {
      const run = await this.#guard.checkOutput(text);
      if (!shown || !shown.run.failed || (run.denied && !shown.run.denied)) shown = { run, index };
      return { pass: !run.denied, detail: run };
    };
    try {
      for await (const out of gateStream(seg.pieces(), this.#guard.window, check)) {
        if (out.kind === 'denied') {
          this.#deny(seg, out.detail);
          break;
        }
        seg.items.splice(seg.items.indexOf(out.payload), 1);
        this.#pass(out.payload);
      }
    } catch {
      // A check that throws stops the response: unchecked text never leaves.
      if (!seg.denied) this.#deny(seg, undefined);
    } finally {
      if (shown) this.#guard.note('after_request_hooks', shown.run, { window_index: shown.index });
    }
  }

  /** Tells the client, cancels the responses, deletes their items and passes on what is left without the model's text. */
  #deny(seg: Segment, run: HooksRun | undefined): void {
    seg.denied = true;
    seg.end();
    const message = this.#guard.stopped(run);
    // What a check found may quote the denied text: the client is told which hooks, the log keeps the rest.
    const results = run ? { before_request_hooks: [], after_request_hooks: run.outcomes.map(withoutData) } : undefined;
    for (const id of seg.responses) this.#io.toProvider(JSON.stringify({ type: 'response.cancel', event_id: this.#guard.eventId(), response_id: id }));
    for (const id of seg.outputItems) {
      this.#deleted.add(id);
      this.#io.toProvider(JSON.stringify({ type: 'conversation.item.delete', event_id: this.#guard.eventId(), item_id: id }));
    }
    this.#io.toClient(Buffer.from(this.#guard.errorEvent('hooks_failed', message, null, results)), false);
    for (const ev of seg.items.splice(0)) this.#scrubbed(seg, ev);
  }

  /**
   * An event of a stopped segment: `response.done` passes rewritten (`incomplete`, reason
   * `content_filter`, no output); the response's other events and the model's items are dropped;
   * everything else (session, input audio, rate limits, errors) passes.
   */
  #scrubbed(seg: Segment, ev: Ev): void {
    const e = ev.event;
    if (!e) return this.#pass(ev);
    const type = str(e.type);
    if (type === 'response.done' && isRecord(e.response)) {
      const response = { ...e.response, status: 'incomplete', status_details: { type: 'incomplete', reason: 'content_filter' }, output: [] };
      return this.#pass({ ...ev, data: Buffer.from(JSON.stringify({ ...e, response })) });
    }
    if (type === 'response.created' && ev.text === '') return this.#pass(ev);
    if (type.startsWith('response.')) return;
    const itemId = str(e.item_id) || (isRecord(e.item) ? str(e.item.id) : '');
    if (type.startsWith('conversation.item.') && (ev.text !== '' || isModelItem(e.item) || seg.outputItems.has(itemId))) return;
    this.#pass(ev);
  }

  #pass(ev: Ev): void {
    this.#io.toClient(ev.data, ev.binary);
  }
}
