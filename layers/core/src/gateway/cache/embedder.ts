/** Embeds text for the semantic cache through an OpenAI-compatible embeddings endpoint. */
import { readWithin } from '../../http/node-streams.ts';
import { findProvider } from '../../providers/registry.ts';
import { parseOutboundUrl, type TrustedHosts } from '../../security/ssrf.ts';
import type { Upstream } from '../../ports/upstream.ts';
import type { CacheSettings } from '../../kernel/routing.ts';
import type { Embedder } from './semantic.ts';

export interface EmbedderDeps {
  upstream: Upstream;
  trustedHosts: TrustedHosts;
}

const EMBED_TIMEOUT_MS = 10_000;
/** One embedding is tens of kilobytes; a larger answer is not one (nor worth holding). */
const MAX_EMBEDDING_ANSWER = 4 << 20;

export function createEmbedder(deps: EmbedderDeps, settings: NonNullable<CacheSettings['embedding']>, fallbackKey: string | undefined): Embedder | undefined {
  const provider = findProvider(settings.provider);
  const path = provider?.endpoints.embed;
  // Native-format providers' embeddings are not OpenAI's request: the cache cannot call them directly.
  if (!provider || !path || provider.native) return undefined;
  const base = settings.custom_host
    ? parseOutboundUrl(settings.custom_host, 'cache.embedding.custom_host', deps.trustedHosts).href.replace(/\/+$/, '')
    : provider.baseUrl;
  const key = settings.api_key ?? fallbackKey;
  return async (text) => {
    const res = await deps.upstream.send({
      url: new URL(base + path),
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify({ model: settings.model, input: text }),
      timeoutMs: EMBED_TIMEOUT_MS,
    });
    const bytes = await readWithin(res.body, MAX_EMBEDDING_ANSWER, () => new Error(`embedding answer larger than ${MAX_EMBEDDING_ANSWER} bytes`));
    if (res.status !== 200) throw new Error(`embedding provider answered ${res.status}`);
    const json = JSON.parse(bytes.toString('utf8')) as { data?: Array<{ embedding?: number[] }> };
    const vector = json.data?.[0]?.embedding;
    if (!Array.isArray(vector) || vector.length === 0) throw new Error('embedding provider returned no vector');
    return Float32Array.from(vector);
  };
}
