/** A provider is data: where it lives, how it authenticates, which endpoints it serves. */

/**
 * Every unified endpoint. Paths are templates: `{id}` parts are filled from the request's path
 * (e.g. `/files/{file_id}`).
 */
export const ENDPOINT_TYPES = [
  'chatComplete',
  'complete',
  'embed',
  'imageGenerate',
  'imageEdit',
  'imageVariation',
  'createSpeech',
  'createTranscription',
  'createTranslation',
  'moderate',
  'rerank',
  'listModels',
  'uploadFile',
  'listFiles',
  'retrieveFile',
  'deleteFile',
  'retrieveFileContent',
  'createBatch',
  'listBatches',
  'retrieveBatch',
  'cancelBatch',
  'getBatchOutput',
  'createFinetune',
  'listFinetunes',
  'retrieveFinetune',
  'cancelFinetune',
  'listFinetuneEvents',
  'listFinetuneCheckpoints',
  'createModelResponse',
  'getModelResponse',
  'deleteModelResponse',
  'listResponseInputItems',
  /** Assistants, threads, messages and runs: one family, the path says which. */
  'assistants',
  /** The realtime WebSocket (`GET /v1/realtime?model=`), relayed event by event (gateway/realtime/). */
  'realtime',
  /** Short-lived client secrets for browsers that connect to the provider directly (and the older sessions). */
  'createRealtimeClientSecret',
  'createRealtimeSession',
  /** Any other provider endpoint, passed through unchanged. */
  'proxy',
  /** The MCP gateway (`/mcp/{server-slug}`): JSON-RPC relayed to an MCP server, never to a model provider. */
  'mcp',
] as const;

export type EndpointType = (typeof ENDPOINT_TYPES)[number];

/** How the provider expects its key. */
export type ProviderAuth = { kind: 'bearer' } | { kind: 'header'; header: string };

export interface ProviderDefinition {
  readonly id: string;
  readonly name: string;
  /** Base URL without a trailing slash; endpoint paths are appended. */
  readonly baseUrl: string;
  readonly auth: ProviderAuth;
  /** Path template of each endpoint the provider serves, relative to the base URL. */
  readonly endpoints: Readonly<Partial<Record<EndpointType, string>>>;
  /** Provider options (config keys, or `x-gw-<option>` headers) sent as provider headers. */
  readonly optionHeaders?: Readonly<Record<string, string>>;
  /**
   * The provider runs on the caller's own machine or cluster (Ollama, vLLM ...): there is no public
   * base URL, so a request must name one with `x-gw-custom-host` (or `custom_host`). `baseUrl` is
   * then only the documented default, shown in the error.
   */
  readonly requiresCustomHost?: boolean;
  /** Where the provider's wire format differs from OpenAI's only in names (see request-map.ts). */
  readonly requestMap?: RequestMap;
  /**
   * The provider's wire format is not OpenAI's: calls go through its transforms in
   * `providers/native/` (loaded on first use). `baseUrl` and `endpoints` are then the documented
   * defaults, shown and counted; the native module builds the real URLs from the provider options.
   */
  readonly native?: boolean;
}

/**
 * Declarative request differences, per endpoint. Everything not named here, including fields the
 * gateway does not know, reaches the provider untouched.
 */
export interface RequestMap {
  /** Body fields renamed on their way out: OpenAI's name -> the provider's (e.g. `top_n` -> `top_k`). */
  readonly rename?: Readonly<Partial<Record<EndpointType, Readonly<Record<string, string>>>>>;
  /** A prefix removed from `model` on its way out (e.g. `cohere.`). */
  readonly stripModelPrefix?: Readonly<Partial<Record<EndpointType, string>>>;
}
