/**
 * The guardrail contract shared by the checks (guardrails/checks/), the saved guardrails (admin
 * resource and its store) and the gateway's hook runner. A check is data plus one function: its id
 * (`default.regexMatch`), the events it runs on, a validator of its parameters, and `run`, which
 * answers a verdict for a context and may transform the request or the response.
 */
import type { FieldProblem } from '../http/errors.ts';
import type { CheckRef, GuardrailActions } from '../store/guardrails.ts';
import type { Principal } from './principal.ts';

export type { CheckRef, GuardrailActions };
import type { EndpointType } from '../providers/types.ts';

/** Which texts of a request a check reads: every one, or the last user turn only. */
export type TextScope = 'all' | 'last_user';

/** One text of a request with the role it speaks in (`system`, `user`, `assistant`, `tool` ...). */
export interface TextPart {
  role: string;
  text: string;
}

export type GuardrailEvent = 'beforeRequestHook' | 'afterRequestHook';

/** What a check sees (the shape the reference's plugins receive). */
export interface CheckContext {
  event: GuardrailEvent;
  requestType: EndpointType;
  /** The provider of the target (after-request), or the one routing will start with. */
  provider: string | undefined;
  metadata: Readonly<Record<string, unknown>>;
  request: {
    json: Readonly<Record<string, unknown>>;
    /** The request's texts in the hook's scope, joined by new lines (guardrails/text.ts says which). */
    text: string;
    /** The same texts one by one, each with its role, for checks that read a conversation. */
    parts: readonly TextPart[];
    /** Which of the request's texts the hook reads: every caller-controlled text, or the last user turn. */
    scope: TextScope;
    isStreamingRequest: boolean;
  };
  /** After-request only: the answer (for a stream, the text assembled so far). */
  response?: {
    json: unknown;
    text: string;
    statusCode: number;
  };
}

export interface CheckResult {
  verdict: boolean;
  error?: { message: string } | null;
  data?: unknown;
  /** A mutator changed the request or the response. */
  transformed?: boolean;
  transformedData?: {
    request?: { json: Record<string, unknown> };
    response?: { json: unknown };
  };
}

/** What checks may use from outside: outbound HTTP through the SSRF guard, a clock. */
export interface CheckDeps {
  /** fetch, with every URL (and redirect) checked like custom hosts; bounded by `timeoutMs`. */
  fetch(url: string, init: RequestInit & { timeoutMs?: number; maxBytes?: number }): Promise<Response>;
  now(): number;
}

export interface CheckDefinition {
  /** `default.regexMatch`, `azure.contentSafety` ... */
  readonly id: string;
  readonly events: readonly GuardrailEvent[];
  /** The check may rewrite the request or the answer: hooks holding it run their checks in order, so each rewrite is applied. */
  readonly transforms?: boolean;
  /** Problems with the parameters, paths relative to `parameters` (`operator: must be one of ...`). */
  validate(parameters: Readonly<Record<string, unknown>>): FieldProblem[];
  run(ctx: CheckContext, parameters: Readonly<Record<string, unknown>>, deps: CheckDeps): Promise<CheckResult>;
}

/** A saved guardrail as the gateway reads it. */
export interface SavedGuardrail {
  id: string;
  slug: string;
  version_id: string;
  name: string;
  checks: CheckRef[];
  actions: GuardrailActions;
}

/** Saved guardrails by id or slug within the caller's workspace (cached, like saved configs). */
export interface GuardrailSource {
  forGateway(principal: Principal, idOrSlug: string): Promise<SavedGuardrail | undefined>;
  invalidate(): void;
}

/** Result per check, as answered in `hook_results` and logged. */
export interface CheckOutcome {
  id: string;
  verdict: boolean;
  error: { message: string } | null;
  data: unknown;
  execution_time: number;
  transformed: boolean;
}

/** Result per hook. */
export interface HookOutcome {
  id: string;
  type: 'guardrail' | 'mutator';
  verdict: boolean;
  deny: boolean;
  checks: CheckOutcome[];
  feedback: unknown;
  execution_time: number;
  /** Streams: the window (0 first) whose check this result is. */
  window_index?: number;
}
