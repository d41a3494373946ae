/** A provider is data: where it lives, how it authenticates, which endpoints it serves. */

export type EndpointType = 'chatComplete' | 'embed';

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
  /** Path of each endpoint the provider serves, relative to the base URL. */
  readonly endpoints: Readonly<Partial<Record<EndpointType, string>>>;
  /** Provider options (config keys, or `x-gw-<option>` headers) sent as provider headers. */
  readonly optionHeaders?: Readonly<Record<string, string>>;
}
