/**
 * A dialect is a wire format other than OpenAI's that a route accepts (Anthropic's Messages today,
 * the Responses format later where it differs). It wraps the pipeline at three points and nowhere
 * else: the request's headers and body are translated into the OpenAI request the pipeline
 * validates and routes; the target caller is wrapped (targets that speak the dialect natively take
 * the request as it came); the answer and every refusal are rendered in the dialect's format.
 * A route names its dialect as a loader, so the dialect's code is imported on its first request.
 */
import type { GantryError } from '../http/errors.ts';
import type { Clock } from '../ports/clock.ts';
import type { CallerDeps, CallInput } from './call-target.ts';
import type { GatewayRecord } from '../kernel/lifecycle.ts';
import type { ProviderAnswer } from './respond.ts';
import type { TargetCaller } from './routing/execute.ts';
import type { ResolvedTarget } from '../kernel/routing.ts';
import type { Pricer } from '../kernel/usage.ts';

export interface Dialect {
  readonly name: string;
  /**
   * The request's headers as the gateway reads them (a dialect's SDK may send the gateway key in a
   * header of its own), and the client's provider key when it is not in `Authorization`.
   */
  inbound(headers: Headers): { headers: Headers; providerKey?: string };
  /** The request in OpenAI's format, from the client's JSON body (its parsed value and text). */
  translate(value: Record<string, unknown>, text: string): DialectRequest;
  /** A gateway refusal in the dialect's error shape. */
  refusalBody(e: GantryError): unknown;
}

/** One request in a dialect, once translated. */
export interface DialectRequest {
  /** The OpenAI request the pipeline validates and routes. */
  openai: Record<string, unknown>;
  /** Innermost caller decorator: answers the targets the dialect serves itself, passes the rest on. */
  wrapCaller(inner: TargetCaller, input: CallInput, deps: CallerDeps): TargetCaller;
  /** The routing engine's answer rendered in the dialect's format. */
  answer(a: DialectAnswer): Promise<Response>;
}

export interface DialectAnswer {
  answer: ProviderAnswer;
  /** The target that answered. */
  target: ResolvedTarget;
  record: GatewayRecord;
  clock: Clock;
  pricer: Pricer;
  /** The gateway's response headers (the answerer may add `x-gw-cost`). */
  out: Record<string, string>;
  /** Completes the record (hooks) once the response has ended. */
  done: () => void;
}

/** A route's dialect, imported once on first use. */
export type DialectLoader = () => Promise<Dialect>;

export function lazyDialect(load: () => Promise<Dialect>): DialectLoader {
  let loaded: Promise<Dialect> | undefined;
  return () => (loaded ??= load());
}
