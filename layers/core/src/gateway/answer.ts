/**
 * The answer the client gets, one answerer per kind: the passthrough's bytes as the provider sent
 * them, a priced JSON answer (read whole so that `x-gw-cost` goes with it), a relayed answer
 * (streams as they come, provider errors in OpenAI's shape), and the gateway's own refusal. A
 * dialect renders its own answers and refusals.
 */
import { asGantryError, type GantryError } from '../http/errors.ts';
import { bytesResponse, fastBodyOf } from '../http/bodies.ts';
import { tryParseJson } from '../http/json.ts';
import { toResponse } from '../http/error-response.ts';
import { readUpTo } from '../http/node-streams.ts';
import { formatUsd } from '../pricing/cost.ts';
import type { EndpointType } from '../providers/types.ts';
import type { Flight } from './flight.ts';
import type { Input } from './input.ts';
import { observeBody } from './observe.ts';
import {
  endCleanly,
  namedErrorEvent,
  openAIErrorEvent,
  passedHeaders,
  readProvider,
  relay,
  relayRaw,
  transformJsonAnswer,
  type ProviderAnswer,
} from './respond.ts';
import type { Outcome } from './routing/execute.ts';
import { noteOpenAIUsage, priceRecord } from '../kernel/usage.ts';

const isJson = (contentType: unknown): boolean => typeof contentType === 'string' && /[/+]json\b/i.test(contentType);
const is2xx = (status: number): boolean => status >= 200 && status < 300;
const isEventStream = (contentType: string): boolean => contentType.includes('text/event-stream');

/** Endpoints whose non-streamed answers carry token usage: read whole before they are sent, for `x-gw-cost`. */
const PRICED: ReadonlySet<EndpointType> = new Set(['chatComplete', 'complete', 'embed', 'createModelResponse']);
/** Larger answers are relayed as they come, without `x-gw-cost` (the cost is still logged when known). */
const MAX_PRICED_JSON = 4 << 20;

/** Picks the answerer for the routing engine's outcome. */
export async function answer(f: Flight, outcome: Outcome, input: Input): Promise<Response> {
  if (!outcome.body) return refuse(f, outcome.error ?? asGantryError(undefined));
  f.record.status = outcome.status;
  let up: ProviderAnswer = { status: outcome.status, headers: outcome.headers, body: outcome.body };
  const { deps, record, out, done } = f;
  if (input.dialect) return input.dialect.answer({ answer: up, target: outcome.target, record, clock: deps.clock, pricer: deps.pricing, out, done });
  // The passthrough relays every answer as it is, errors included.
  if (f.spec.endpoint === 'proxy') return answerProxied(f, up);
  const transform = f.spec.transformAnswer;
  if (transform && is2xx(up.status) && isJson(up.headers['content-type'])) {
    const provider = outcome.target.provider;
    up = await transformJsonAnswer(up, (json) => transform(json, provider));
  }
  if (is2xx(up.status) && !record.stream && PRICED.has(f.spec.endpoint) && isJson(up.headers['content-type'])) return answerPriced(f, up);
  return answerRelayed(f, up);
}

/** The provider's bytes as they come; a body it cut short still ends cleanly (an SSE one with an error event). */
function answerProxied(f: Flight, up: ProviderAnswer): Response {
  const contentType = String(up.headers['content-type'] ?? '');
  const body = endCleanly(up.body, f.record, isEventStream(contentType) ? namedErrorEvent : undefined);
  observeBody(body, contentType, f.record, f.deps.clock, f.done);
  return relayRaw({ ...up, body }, f.out);
}

/**
 * A complete JSON answer, read whole so that its cost goes with it; a very large one is relayed
 * instead. Its bytes are in memory, so they go out as they are (no stream to watch): the record is
 * finished here and the hooks' `complete` still runs after the response (completeLater).
 */
async function answerPriced(f: Flight, up: ProviderAnswer): Promise<Response> {
  const whole = await readProvider(readUpTo(up.body, MAX_PRICED_JSON));
  if (!('bytes' in whole)) return answerRelayed(f, { ...up, body: whole.rest });
  const { record, deps } = f;
  record.firstByteAt = record.endedAt = deps.clock.now();
  record.responseBytes = whole.bytes.length;
  const parsed = tryParseJson(whole.bytes.toString('utf8'));
  if (parsed.ok && parsed.value !== null && typeof parsed.value === 'object') {
    record.response = parsed.value;
    noteOpenAIUsage(record, parsed.value);
  }
  const micros = priceRecord(record, deps.pricing);
  if (micros !== undefined) f.out['x-gw-cost'] = formatUsd(micros);
  const res = bytesResponse(whole.bytes, { status: up.status, headers: passedHeaders(up, f.out) });
  f.done();
  return res;
}

/**
 * Streams and other answers as they come; a provider error keeps its status, in OpenAI's shape. A
 * body the provider cut (closed early, or silent past the idle timeout) ends cleanly, a stream with
 * an error event the OpenAI SDKs raise (`data: {"error": ...}`), and the log records what happened.
 */
async function answerRelayed(f: Flight, up: ProviderAnswer): Promise<Response> {
  const contentType = String(up.headers['content-type'] ?? '');
  if (up.status < 400) {
    up = { ...up, body: endCleanly(up.body, f.record, isEventStream(contentType) ? openAIErrorEvent : undefined) };
    observeBody(up.body, contentType, f.record, f.deps.clock, f.done);
  }
  const response = await relay(up, f.out);
  if (up.status >= 400) {
    // The provider's error, as the client got it, is what the log shows for this request.
    const sent = fastBodyOf(response);
    const parsed = typeof sent === 'string' ? tryParseJson(sent) : undefined;
    if (parsed?.ok) f.record.response = parsed.value;
    f.done();
  }
  return response;
}

/** The gateway's own refusal (or failure), in OpenAI's shape or the dialect's. */
export function refuse(f: Flight, e: GantryError): Response {
  const { record } = f;
  record.status = e.status;
  record.errorCode = e.openaiCode ?? e.code;
  record.errorMessage = e.message;
  record.endedAt = f.deps.clock.now();
  f.done();
  return toResponse(e, f.dialect ?? 'gateway', f.out);
}

/** A thrown error as the client's answer; an unexpected one is logged. */
export function refuseThrown(f: Flight, err: unknown): Response {
  const e = asGantryError(err);
  if (e.status >= 500 && e.status !== 502 && e.status !== 503) f.deps.logger.error('gateway request failed', { traceId: f.record.traceId, error: err });
  return refuse(f, e);
}
