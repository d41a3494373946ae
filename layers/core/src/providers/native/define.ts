/**
 * A native provider's module from its one declaration (`providers/native-declarations.ts`): the id,
 * name and the set of endpoints come from the declaration, which the registry (and
 * the gateway's cold start) reads without loading this module; the module adds only behaviour.
 */
import type { NativeEndpoint, NativeProvider, ProviderRequestContext } from '../transform.ts';
import type { ProviderDefinition } from '../types.ts';

/** Builds an endpoint's URL from the request; `declared` is the declaration's path template. */
export type EndpointBuilder = (ctx: ProviderRequestContext, declared: string) => NativeEndpoint;

type Endpoints = ProviderDefinition['endpoints'];

export type NativeImplementation<E extends Endpoints> = Omit<NativeProvider, 'id' | 'name' | 'baseUrl' | 'endpoints'> & {
  /** Absent: the declared base URL, which must then have no `{placeholders}`. */
  baseUrl?(ctx: ProviderRequestContext): string;
  /** How each declared endpoint is called; absent: POST to the declared path. Only declared endpoints. */
  endpoints?: { readonly [K in keyof E]?: EndpointBuilder };
};

export function defineNative<E extends Endpoints>(decl: ProviderDefinition & { readonly endpoints: E }, impl: NativeImplementation<E>): NativeProvider {
  const { baseUrl, endpoints: builders = {}, ...behaviour } = impl;
  if (!baseUrl && decl.baseUrl.includes('{')) throw new Error(`${decl.id}: the declared base URL has placeholders, so the module must build it`);
  const endpoints: Record<string, (ctx: ProviderRequestContext) => NativeEndpoint> = {};
  for (const [endpoint, declared] of Object.entries(decl.endpoints)) {
    if (declared === undefined) continue;
    const build = (builders as Readonly<Record<string, EndpointBuilder | undefined>>)[endpoint];
    endpoints[endpoint] = build ? (ctx) => build(ctx, declared) : () => ({ method: 'POST', path: declared });
  }
  return {
    ...behaviour,
    id: decl.id,
    name: decl.name,
    baseUrl: baseUrl ?? (() => decl.baseUrl),
    endpoints,
  };
}
