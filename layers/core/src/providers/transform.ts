/**
 * Providers whose wire format is not OpenAI's. A native provider is still mostly data (where it
 * lives, its endpoints, option headers); the functions below exist only where the format differs:
 * building the URL from provider options, signing, and translating bodies, streams and errors to
 * and from OpenAI's shapes. `providers/native/call.ts` runs one call through them.
 */
import type { OpenAIErrorBody } from '../http/errors.ts';
import type { Clock } from '../ports/clock.ts';
import type { EndpointType } from './types.ts';

/** Provider options: config/integration keys or `x-gw-<option>` headers (aws_region, vertex_project_id ...). */
export type ProviderOptions = Readonly<Record<string, unknown>>;

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** Epoch milliseconds after which the credentials stop working (temporary credentials). */
  expiresAt?: number;
}

export interface AssumeRoleInput {
  roleArn: string;
  externalId?: string;
  region: string;
  sessionName: string;
  /** The credentials to call STS with; absent when the caller's own (e.g. the Lambda role's) apply. */
  base?: AwsCredentials;
}

/** Exchanges a role for temporary credentials (STS AssumeRole); injected so that tests and runtimes choose how. */
export type FetchCredentials = (input: AssumeRoleInput) => Promise<AwsCredentials>;

export interface ProviderRequestContext {
  /** The model the provider is asked for (after override_params). */
  readonly model: string;
  /** The OpenAI-shaped body as the provider should receive it (override_params merged). */
  readonly request: Readonly<Record<string, unknown>>;
  readonly stream: boolean;
  /** `stream_options.include_usage`: whether the client wants the usage chunk. */
  readonly includeUsage: boolean;
  readonly options: ProviderOptions;
  /** The provider key: the target's `api_key` or the client's `Authorization: Bearer`. */
  readonly apiKey?: string | undefined;
  /** When false, provider extras (reasoning in `content_blocks`, `thinking`) are allowed. */
  readonly strictOpenAICompliance: boolean;
  readonly clock: Pick<Clock, 'now'>;
  /** Used as the id of OpenAI objects when the provider gives none. */
  readonly requestId: string;
  readonly fetchCredentials?: FetchCredentials | undefined;
  /** HTTP for token endpoints (Google OAuth); defaults to the global fetch. */
  readonly fetch?: typeof fetch | undefined;
  /** Overrides of fixed auth endpoints (tests, private endpoints). */
  readonly authEndpoints?: { readonly googleToken?: string; readonly sts?: string } | undefined;
}

/** A request about to leave for the provider; the shape `UpstreamClient.send` takes, minus timeout and signal. */
export interface OutgoingRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body?: string | Uint8Array | undefined;
}

export interface NativeEndpoint {
  method: 'GET' | 'POST';
  /** Path and query, relative to `baseUrl` unless `baseUrl` is given here. */
  path: string;
  /** A different host for this endpoint (e.g. Bedrock's agent runtime for rerank). */
  baseUrl?: string;
}

/** Token usage in OpenAI's shape, with the cache writes some providers bill separately. */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
  /** Anthropic-style cache accounting; only in bodies when strict_openai_compliance is false. */
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

/** What a transformed stream reported: always available to the caller, whether or not the client asked for usage. */
export interface StreamOutcome {
  usage?: ChatUsage;
  finishReason?: FinishReason;
  model?: string;
  /** A provider error met mid-stream (sent to the client as an `error` event). */
  error?: OpenAIErrorBody;
}

/** Provider stream bytes in, OpenAI `chat.completion.chunk` SSE text out (`data: {...}\n\n` ... `data: [DONE]\n\n`). */
export interface StreamTransformer {
  push(chunk: Uint8Array): string;
  /** The provider stream ended: what remains, the usage chunk when asked for, and `data: [DONE]`. */
  end(): string;
  outcome(): StreamOutcome;
}

/** What the transforms may know of the provider's answer besides its body. */
export interface ResponseMeta {
  headers?: Readonly<Record<string, string | string[] | undefined>>;
}

export interface NativeProvider {
  readonly id: string;
  readonly name: string;
  baseUrl(ctx: ProviderRequestContext): string;
  readonly endpoints: Readonly<Partial<Record<EndpointType, (ctx: ProviderRequestContext) => NativeEndpoint>>>;
  /** Provider options sent as headers when set (option key -> header name). */
  readonly optionHeaders?: Readonly<Record<string, string>>;
  /** Adds credentials: a key header, a bearer token, or a signature over the final request. */
  authenticate(req: OutgoingRequest, ctx: ProviderRequestContext): Promise<OutgoingRequest>;
  /** OpenAI body -> provider body; absent means the OpenAI body is sent unchanged. Throws ValidationError for what cannot be mapped. */
  transformRequest?(endpoint: EndpointType, body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext): Record<string, unknown>;
  /** Provider JSON -> OpenAI JSON; absent means unchanged. */
  transformResponse?(endpoint: EndpointType, json: unknown, ctx: ProviderRequestContext, meta: ResponseMeta): unknown;
  /** Absent means the provider already streams OpenAI chunks. */
  transformStream?(endpoint: EndpointType, ctx: ProviderRequestContext): StreamTransformer;
  /** Any provider error body -> OpenAI's error shape (the status is kept by the caller). */
  transformError(status: number, text: string, meta: ResponseMeta): OpenAIErrorBody;
}
