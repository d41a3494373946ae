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
  /** Any other provider endpoint, passed through unchanged. */
  'proxy',
] as const;

export type EndpointType = (typeof ENDPOINT_TYPES)[number];

/** How the provider expects its key. */
export type ProviderAuth =
  | { kind: 'bearer' }
  | { kind: 'header'; header: string };

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
}
