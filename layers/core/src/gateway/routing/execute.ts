/**
 * Runs a validated config: walks the strategy tree (single, loadbalance, fallback, conditional,
 * nested to any depth), retries each leaf with backoff, and reports which target answered and how
 * many retries it took. Decisions are made on the status before any byte of the body is sent, so a
 * started stream is never retried or failed over.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { GantryError, RequestTimeoutError, UpstreamError, ValidationError } from '../../http/errors.ts';
import type { Clock } from '../../ports/clock.ts';
import { pickConditional } from './conditions.ts';
import { childContext, rootContext, toResolvedTarget, type Inherited } from './inherit.ts';
import { pickWeighted } from './loadbalance.ts';
import { backoffDelay, DEFAULT_RETRY_STATUS_CODES, MAX_RETRY_ATTEMPTS, RETRY_AFTER_BUDGET_MS, retryAfterMs } from './retry.ts';
import type { ConditionContext, ConfigNode, ResolvedTarget } from '../../kernel/routing.ts';

/** What one call to a provider produced: a response, or a provider-side failure with a status. */
export interface Attempt {
  status: number;
  headers: IncomingHttpHeaders;
  /** The response body; absent when the call failed before a response (error set). */
  body?: Readable;
  /** Provider-side failure (unreachable, timed out) expressed as a status. */
  error?: GantryError;
  /** Set when the response cache took part: HIT, MISS, SEMANTIC HIT ... */
  cacheStatus?: string;
  /** The target as actually called, when a wrapper rewrote it (a managed `@slug` provider). */
  target?: ResolvedTarget;
}

/** Calls one resolved target once. Throws a GantryError for gateway-side problems. */
export type TargetCaller = (target: ResolvedTarget, signal?: AbortSignal) => Promise<Attempt>;

export interface Outcome extends Attempt {
  target: ResolvedTarget;
  /** Retries made; -1 when the attempts or the Retry-After budget ran out. */
  retries: number;
}

export interface ExecuteOptions {
  ctx: ConditionContext;
  /** Settings every target inherits unless it sets its own (e.g. the `x-gw-provider` header). */
  base?: Partial<Inherited>;
  signal?: AbortSignal;
}

export interface ExecutorDeps {
  clock: Clock;
  call: TargetCaller;
  random?: () => number;
}

/** Provider-side failures count as answers with a status; anything else stops the request. */
function asAttempt(err: unknown): Attempt {
  if ((err instanceof UpstreamError && err.status !== 499) || err instanceof RequestTimeoutError) {
    return { status: err.status, headers: {}, error: err };
  }
  throw err;
}

function discard(a: Attempt): void {
  a.body?.destroy();
}

export class RoutingExecutor {
  readonly #clock: Clock;
  readonly #call: TargetCaller;
  readonly #random: () => number;

  constructor(deps: ExecutorDeps) {
    this.#clock = deps.clock;
    this.#call = deps.call;
    this.#random = deps.random ?? Math.random;
  }

  execute(config: ConfigNode, opts: ExecuteOptions): Promise<Outcome> {
    return this.#run(config, rootContext(opts.base), 'config', opts);
  }

  async #run(node: ConfigNode, inherited: Inherited, path: string, opts: ExecuteOptions): Promise<Outcome> {
    const targets = node.targets;
    if (!targets || targets.length === 0) return this.#leaf(toResolvedTarget(inherited, node, path), opts);
    const here = childContext(inherited, node);
    const child = (i: number) => this.#run(targets[i] as ConfigNode, here, `${path}.targets[${i}]`, opts);

    switch (node.strategy?.mode ?? 'single') {
      case 'loadbalance':
        return child(
          pickWeighted(
            targets.map((t) => t.weight ?? 1),
            this.#random,
          ),
        );
      case 'conditional': {
        const i = pickConditional(node.strategy!, targets, opts.ctx);
        if (i === undefined) {
          throw ValidationError.field(`${path}.strategy`, 'no condition matched the request and no default target is set');
        }
        return child(i);
      }
      case 'fallback': {
        const onCodes = node.strategy?.on_status_codes;
        let last: Outcome | undefined;
        for (let i = 0; i < targets.length; i++) {
          if (last) discard(last);
          last = await child(i);
          // Listed codes fall back even when 2xx (246: a hook flagged the answer).
          const failed = last.status < 200 || last.status >= 300 || onCodes?.includes(last.status) === true;
          if (!failed || (onCodes && !onCodes.includes(last.status))) return last;
        }
        return last as Outcome;
      }
      default:
        return child(0);
    }
  }

  async #leaf(target: ResolvedTarget, opts: ExecuteOptions): Promise<Outcome> {
    const retry = target.retry;
    const attempts = Math.min(retry?.attempts ?? 0, MAX_RETRY_ATTEMPTS);
    const codes = retry?.on_status_codes ?? DEFAULT_RETRY_STATUS_CODES;
    let waited = 0;
    for (let made = 0; ; made++) {
      const attempt = await this.#call(target, opts.signal).catch(asAttempt);
      if (!codes.includes(attempt.status)) return { ...attempt, target: attempt.target ?? target, retries: made };
      if (made >= attempts) return { ...attempt, target: attempt.target ?? target, retries: attempts > 0 ? -1 : 0 };

      let wait = backoffDelay(made, this.#random);
      if (retry?.use_retry_after_header && attempt.status === 429) {
        const asked = retryAfterMs(attempt.headers, this.#clock.now());
        if (asked !== undefined) {
          // Waiting past the budget would only delay the same failure.
          if (waited + asked > RETRY_AFTER_BUDGET_MS) return { ...attempt, target: attempt.target ?? target, retries: -1 };
          wait = asked;
        }
      }
      discard(attempt);
      await this.#clock.sleep(wait, opts.signal);
      waited += wait;
    }
  }
}
