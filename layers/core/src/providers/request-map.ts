/**
 * Applies a provider's declarative `requestMap` to an outgoing body. The one place where a body is
 * rewritten for an OpenAI-wire provider; call it on the body after `override_params` are merged:
 *
 *   const mapped = applyRequestMap(provider, endpoint, body);
 *   const text = mapped === body ? originalText : JSON.stringify(mapped);
 *
 * It returns the same object when nothing applies, so the client's bytes can be sent unchanged.
 * Only named fields move; every other field, known or not, passes through as it came.
 */
import type { EndpointType, ProviderDefinition } from './types.ts';

export function applyRequestMap(
  provider: Pick<ProviderDefinition, 'requestMap'>,
  endpoint: EndpointType,
  body: Record<string, unknown>,
): Record<string, unknown> {
  const map = provider.requestMap;
  if (!map) return body;
  let out = body;
  const renames = map.rename?.[endpoint];
  if (renames) {
    for (const [from, to] of Object.entries(renames)) {
      if (!(from in out)) continue;
      if (out === body) out = { ...body };
      // An explicit provider-named field wins over the OpenAI-named one.
      if (!(to in out)) out[to] = out[from];
      delete out[from];
    }
  }
  const prefix = map.stripModelPrefix?.[endpoint];
  const model = out.model;
  if (prefix && typeof model === 'string' && model.startsWith(prefix)) {
    if (out === body) out = { ...body };
    out.model = model.slice(prefix.length);
  }
  return out;
}
