/** Waiting for request logs in tests: the hooks' pending work, then the in-process queues. */
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import type { TestGantry } from './gantry.ts';
import type { LogEvent } from '../../layers/core/src/observability/log-event.ts';
import { EXPORTS_QUEUE, LOGS_QUEUE } from '../../layers/core/src/observability/messages.ts';
import { LocalQueueFactory } from '../../layers/core/src/ports/queue-factory.ts';
import { PATIENCE_MS, until } from './until.ts';

/** Runs the hooks' pending `complete` work and the log queues to the end, a few rounds. */
export async function settleLogs(deps: CoreDeps): Promise<void> {
  for (let round = 0; round < 3; round++) {
    // The pipeline schedules `complete` with setImmediate once the response body ended.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 5));
    await Promise.all(deps.gatewayHooks.map((h) => h.flush?.()));
    if (deps.queues instanceof LocalQueueFactory) {
      // Only the log queues: another area's queue may have no consumer in a test.
      await deps.queues.get(LOGS_QUEUE).drain();
      await deps.queues.get(EXPORTS_QUEUE).drain();
    }
  }
}

/**
 * Polls until `probe` finds something (a request's log is stored), settling the log queues before
 * each look; gives up after PATIENCE_MS, which bounds a hang, not the machine's speed.
 */
export async function waitFor<T>(deps: CoreDeps, probe: () => Promise<T | undefined>): Promise<T> {
  return until(
    async () => {
      await settleLogs(deps);
      return probe();
    },
    'the request log',
    PATIENCE_MS,
    50,
  );
}

/** A small deterministic PRNG (mulberry32), so generated logs are the same on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface SyntheticOptions {
  start: number;
  spanMs: number;
  workspaceId: string;
  organisationId?: string;
  seed?: number;
  /** Requests come in bursts: this many busy minutes across the span (default: any minute). */
  busyMinutes?: number;
}

/** `n` varied log events of one workspace, spread over `spanMs` from `start`. */
export function syntheticEvents(n: number, opts: SyntheticOptions): LogEvent[] {
  const rnd = prng(opts.seed ?? 1);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const bursts = opts.busyMinutes
    ? Array.from({ length: opts.busyMinutes }, () => opts.start + Math.floor((rnd() * opts.spanMs) / 60_000) * 60_000)
    : undefined;
  const out: LogEvent[] = [];
  for (let i = 0; i < n; i++) {
    const started = bursts ? Math.min(pick(bursts) + Math.floor(rnd() * 60_000), opts.start + opts.spanMs - 1) : opts.start + Math.floor(rnd() * opts.spanMs);
    const status = pick([200, 200, 200, 200, 200, 200, 400, 401, 429, 500, 502]);
    const ok = status < 300;
    const cache = ok ? pick([null, null, 'MISS', 'HIT', 'SEMANTIC HIT', 'DISABLED']) : null;
    const retries = ok ? pick([0, 0, 0, 1, 2]) : pick([0, -1]);
    const prompt = ok ? Math.floor(rnd() * 500) : 0;
    const completion = ok ? Math.floor(rnd() * 300) : 0;
    const provider = pick(['openai', 'anthropic', '@team-openai']);
    out.push({
      v: 1,
      id: `evt-${opts.seed ?? 1}-${i}`,
      source: 'gateway',
      organisation_id: opts.organisationId ?? 'org-1',
      workspace_id: opts.workspaceId,
      created_at: new Date(started).toISOString(),
      started_ms: started,
      trace_id: `trace-${i % 40}`,
      span_id: rnd() < 0.5 ? `span-${i % 7}` : null,
      parent_span_id: null,
      span_name: null,
      api_key_id: pick(['key-a', 'key-b', 'key-c']),
      key_user_id: pick([null, 'user-1', 'user-2']),
      config_id: pick([null, 'pc-main', 'pc-alt']),
      config_source: null,
      provider,
      ai_service: provider.startsWith('@') ? null : provider,
      model: pick(['gpt-4o', 'gpt-4o-mini', 'claude-3-5-sonnet', null]),
      endpoint: 'chatComplete',
      method: 'POST',
      path: '/v1/chat/completions',
      stream: rnd() < 0.3,
      status_code: status,
      is_success: ok,
      error_code: ok ? null : 'upstream_error',
      error_message: null,
      total_ms: Math.floor(rnd() ** 3 * 20_000),
      upstream_ms: null,
      ttft_ms: null,
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      cached_tokens: 0,
      reasoning_tokens: 0,
      cost_micros: ok && cache !== 'HIT' && cache !== 'SEMANTIC HIT' ? prompt * 3 + completion * 7 : 0,
      cache_savings_micros: cache === 'HIT' || cache === 'SEMANTIC HIT' ? 500 : 0,
      cache_status: cache,
      retries,
      last_used_option_index: 'config',
      fallback: ok && rnd() < 0.1,
      cancelled: false,
      metadata: { team: pick(['search', 'ads']), tier: pick(['free', 'pro']) },
      user: rnd() < 0.8 ? `user-${Math.floor(rnd() * 25)}` : null,
      prompt_slug: pick([null, 'welcome', 'summary']),
      organisation: null,
      environment: pick(['prod', 'staging']),
      request_body: { model: 'x', messages: [{ role: 'user', content: `hello ${i}` }] },
      request_bytes: 40,
      response_bytes: 100,
    });
  }
  return out;
}

/** A request's stored log in full, found by its trace id once ingested. */
export async function storedLog(gw: TestGantry, traceId: string, workspace = 'default'): Promise<Record<string, unknown>> {
  const row = await waitFor(gw.deps, async () => {
    const res = await gw.admin('GET', `/v1/logs?workspace_id=${workspace}&trace_id=${traceId}`);
    return (res.json.data as Array<Record<string, unknown>> | undefined)?.[0];
  });
  return (await gw.admin('GET', `/v1/logs/${String(row.id)}`)).json;
}
