/**
 * Wraps a target caller with the response cache. A target whose (inherited) config has `cache`
 * is answered from the cache when an entry is fresh; otherwise the provider's 200 answer is
 * streamed to the client and, once it has ended, stored (streams as their raw SSE bytes, so a hit
 * replays them). Semantic mode also embeds the prompt and accepts a near-identical earlier one.
 */
import { Readable, Transform } from 'node:stream';
import type { Clock } from '../../ports/clock.ts';
import type { Logger } from '../../ports/logger.ts';
import type { Attempt, TargetCaller } from '../routing/execute.ts';
import type { ResolvedTarget } from '../../kernel/routing.ts';
import { cacheKey } from './key.ts';
import type { ResponseCache } from './response-cache.ts';
import { DEFAULT_SIMILARITY_THRESHOLD, paramsHash, semanticPartition, semanticText, type Embedder, type VectorIndex } from './semantic.ts';

export type CacheStatus = 'HIT' | 'SEMANTIC HIT' | 'MISS' | 'SEMANTIC MISS' | 'REFRESH' | 'DISABLED';

/** Five minutes when a config asks for caching without a max_age. */
export const DEFAULT_MAX_AGE_SECONDS = 300;

/** Headers that describe one response, not the cached content. */
const VOLATILE = /^(content-length|transfer-encoding|date|connection|keep-alive|x-request-id|request-id|x-gw-.*|set-cookie)$/i;

export interface CacheContext {
  workspaceId: string;
  namespace: string | undefined;
  forceRefresh: boolean;
  endpoint: string;
  /** The provider request body for a target (after override_params). */
  requestFor(target: ResolvedTarget): Record<string, unknown>;
  /** Embeds text with the target's semantic embedding settings. */
  embedderFor(target: ResolvedTarget): Embedder | undefined;
}

export interface CachingDeps {
  cache: ResponseCache;
  vectors: VectorIndex;
  clock: Clock;
  logger: Logger;
}

function keepHeaders(headers: Attempt['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !VOLATILE.test(name)) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export function withCache(inner: TargetCaller, deps: CachingDeps, ctx: CacheContext): TargetCaller {
  return async (target, signal) => {
    const settings = target.cache;
    if (!settings) return inner(target, signal);
    const body = ctx.requestFor(target);
    const key = cacheKey({
      workspaceId: ctx.workspaceId,
      namespace: ctx.namespace,
      endpoint: ctx.endpoint,
      provider: `${target.provider ?? ''}|${target.custom_host ?? ''}`,
      body,
    });
    const semantic = settings.mode === 'semantic';
    const maxAge = settings.max_age ?? DEFAULT_MAX_AGE_SECONDS;

    let vector: Float32Array | undefined;
    let partition: string | undefined;
    if (!ctx.forceRefresh) {
      const exact = await deps.cache.get(key);
      if (exact) return hit(exact, 'HIT');
      if (semantic) {
        const text = semanticText(Array.isArray(body.messages) ? body.messages : []);
        const embed = ctx.embedderFor(target);
        if (text && embed) {
          try {
            vector = await embed(text);
            partition = semanticPartition({
              workspaceId: ctx.workspaceId,
              namespace: ctx.namespace,
              endpoint: ctx.endpoint,
              model: String(body.model ?? ''),
              paramsHash: paramsHash(body),
              embedder: `${settings.embedding?.provider ?? ''}/${settings.embedding?.model ?? ''}`,
            });
            const match = await deps.vectors.query(partition, vector, settings.similarity_threshold ?? DEFAULT_SIMILARITY_THRESHOLD, deps.clock.now());
            const near = match && (await deps.cache.get(match.key));
            if (near) return hit(near, 'SEMANTIC HIT');
          } catch (err) {
            // A failing embedding provider must not fail the request: it is only a cache miss.
            deps.logger.warn('semantic cache lookup failed', { error: err });
            vector = undefined;
          }
        }
      }
    }

    const attempt = await inner(target, signal);
    const status: CacheStatus = ctx.forceRefresh ? 'REFRESH' : semantic ? 'SEMANTIC MISS' : 'MISS';
    if (attempt.status !== 200 || !attempt.body) return { ...attempt, cacheStatus: status };

    // Tee: chunks go to the client as they come; the copy is stored when the provider's body has
    // ended, before the client's copy ends (flush runs first), so the next identical request hits.
    const chunks: Buffer[] = [];
    const tee = new Transform({
      transform(chunk: Buffer, _enc, done) {
        chunks.push(chunk);
        done(null, chunk);
      },
      flush(done) {
        const entry = {
          status: 200,
          headers: keepHeaders(attempt.headers),
          body: Buffer.concat(chunks),
          streamed: String(attempt.headers['content-type'] ?? '').includes('text/event-stream'),
        };
        void deps.cache
          .put(key, entry, maxAge)
          .then(() => (vector && partition ? deps.vectors.upsert(partition, key, vector, deps.clock.now() + maxAge * 1000) : undefined))
          .catch((err: unknown) => deps.logger.warn('cache write failed', { error: err }));
        done();
      },
    });
    attempt.body.on('error', (err) => tee.destroy(err));
    tee.on('close', () => {
      if (!attempt.body?.readableEnded) attempt.body?.destroy();
    });
    attempt.body.pipe(tee);
    return { ...attempt, body: tee, cacheStatus: status };
  };
}

function hit(entry: { status: number; headers: Record<string, string>; body: Uint8Array }, status: CacheStatus): Attempt {
  return { status: entry.status, headers: { ...entry.headers }, body: Readable.from([Buffer.from(entry.body)]), cacheStatus: status };
}
