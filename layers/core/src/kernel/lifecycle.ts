/**
 * One gateway request as the rest of the service sees it: a record filled in as the request goes
 * (the source of its log event, its limit settlement and its metrics), and the hooks that act on
 * it. `admit` runs before any provider is called and may refuse the request; `complete` runs once
 * the response has ended, or the client has gone, and never delays the response.
 */
import type { HookOutcome } from './guardrails.ts';
import type { GantryError } from '../http/errors.ts';
import type { AttachedUsageLimit } from './limits.ts';
import type { Principal } from './principal.ts';
import type { EndpointType } from '../providers/types.ts';

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_tokens?: number;
  reasoning_tokens?: number;
}

export interface GatewayRecord {
  /** The log id of this request. */
  id: string;
  traceId: string;
  spanId?: string;
  parentSpanId?: string;
  spanName?: string;
  /** The caller's W3C `traceparent`, when valid: the exported OpenTelemetry trace continues it. */
  traceParent?: { traceId: string; spanId: string };
  endpoint: EndpointType;
  method: string;
  path: string;
  /** Clock milliseconds. */
  startedAt: number;
  principal?: Principal;
  metadata: Record<string, unknown>;
  /** The parsed request body, once it was valid JSON. */
  request?: Record<string, unknown>;
  /** The model that answered (when the answer names it), else the one sent. */
  model?: string;
  /** The model the answering target was sent, after `override_params`. */
  sentModel?: string;
  stream: boolean;
  configSource?: 'inline' | 'saved' | 'key' | 'headers';
  configId?: string;
  provider?: string;
  targetPath?: string;
  retries?: number;
  /** A fallback target (not the first of a fallback node) answered. */
  fallback?: boolean;
  cacheStatus?: string;
  /** The status the client received. */
  status?: number;
  /** Why the gateway refused or failed the request (an admin or OpenAI error code). */
  errorCode?: string;
  errorMessage?: string;
  /** When routing began calling targets (or the cache). */
  executeStartedAt?: number;
  /** When the provider's response headers arrived, and its first and last body bytes. */
  upstreamHeadersAt?: number;
  firstByteAt?: number;
  endedAt?: number;
  usage?: TokenUsage;
  /** Cost in micro-dollars (1e-6 USD). */
  costMicros?: number;
  /** The answer reported usage but its model has no price: it cost nothing, and the log says so. */
  unpriced?: boolean;
  responseBytes?: number;
  /** The provider's response body when it was JSON (for logs); absent for streams. */
  response?: unknown;
  /** A streamed answer's raw SSE text (bounded), assembled for the log after the response. */
  streamText?: string;
  /** The client went away before the response ended. */
  cancelled?: boolean;
  /** Every guardrail hook's result, of every target called. */
  hookResults?: HookResults;
  /** An MCP gateway call: the server's slug, the JSON-RPC method and the tool, prompt or resource it names. */
  mcp?: McpCallFacts;
  /** The prompt version the request was rendered from (`/v1/prompts/{id}/completions`, a Responses `prompt`). */
  prompt?: { id: string; slug: string; versionId: string; version: number };
}

/** What the log says of an MCP call (a batch is method `batch`). */
export interface McpCallFacts {
  server: string;
  method: string;
  name?: string;
}

/** Guardrail hook results as answered in `hook_results` and logged. */
export interface HookResults {
  before_request_hooks: HookOutcome[];
  after_request_hooks: HookOutcome[];
}

/** A managed provider's own usage limit, and the provider id that names its counter. */
export interface TargetBudget {
  providerId: string;
  slug: string;
  limit: AttachedUsageLimit;
}

/**
 * One target about to be called, as hooks see it: known only per target (after routing chose it
 * and a managed provider was resolved), so admitted per target rather than per request.
 */
export interface TargetAdmission {
  /** The target's config path (`config.targets[1]`): a retry of the same target is the same admission. */
  targetPath: string;
  /** The registry provider and the model sent, to price an estimate. */
  provider: string | undefined;
  model: string | undefined;
  /** Set for a managed provider that has a usage limit. */
  budget?: TargetBudget;
}

export interface GatewayHook {
  readonly name: string;
  /**
   * Before any provider call. Throw a GantryError (429, 402 ...) to refuse the request; return
   * headers to add them to the answer (set once every hook has admitted the request).
   */
  admit?(record: GatewayRecord): Promise<void | Record<string, string>>;
  /**
   * Before each target is called. Return a GantryError to refuse this target only (a fallback then
   * tries its next one); throw to fail the request.
   */
  admitTarget?(record: GatewayRecord, target: TargetAdmission): Promise<GantryError | undefined>;
  /**
   * A long-lived request (a realtime session) has used more: its record's usage is the total so
   * far. Return a GantryError to end it (a budget reached); settlement still happens in `complete`.
   */
  progress?(record: GatewayRecord): Promise<GantryError | undefined>;
  /**
   * The record's last writes, after the response has ended or was cancelled and before any hook's
   * `complete`: synchronous, so every `complete` reads a settled record whatever the hooks' order
   * (pricing sets the cost here). Errors are logged, never surfaced.
   */
  settle?(record: GatewayRecord): void;
  /** After every hook settled the record; reads it (and may start work of its own). Errors are logged, never surfaced. */
  complete?(record: GatewayRecord): void | Promise<void>;
  /**
   * Resolves once the work `complete` started has finished (Lambda calls it before the invocation
   * ends, since a frozen environment would stall it).
   */
  flush?(): Promise<void>;
}
