/**
 * The routing engine's own cost, in process, with the provider calls replaced by answers that cost
 * nothing: a three-target fallback whose first target fails. This is the engine's share of a
 * request, the failed call excluded (budget: 50 µs).
 */
import { Readable } from 'node:stream';
import { RoutingExecutor, type Attempt } from '../../layers/core/src/gateway/routing/execute.ts';
import { parseConfigHeader } from '../../layers/core/src/gateway/routing/validate.ts';
import { systemClock } from '../../layers/core/src/ports/clock.ts';

export const FALLBACK_CONFIG = (failing: string, working: string) =>
  JSON.stringify({
    strategy: { mode: 'fallback' },
    retry: { attempts: 0 },
    targets: [
      { provider: 'openai', api_key: 'sk-a', custom_host: failing },
      { provider: 'openai', api_key: 'sk-b', custom_host: working },
      { provider: 'openai', api_key: 'sk-c', custom_host: working },
    ],
  });

export interface EngineResult {
  iterations: number;
  /** Strategy walk, inheritance and outcome handling per request. */
  execute_us: number;
  /** The same plus parsing and validating the inline config header. */
  execute_with_validation_us: number;
}

export async function benchEngine(iterations = 20_000): Promise<EngineResult> {
  const header = FALLBACK_CONFIG('http://failing.example.com/v1', 'http://working.example.com/v1');
  const executor = new RoutingExecutor({
    clock: systemClock,
    call: async (target): Promise<Attempt> =>
      target.path === 'config.targets[0]' ? { status: 503, headers: {} } : { status: 200, headers: {}, body: Readable.from([]) },
  });
  const ctx = { metadata: {}, params: { model: 'm' }, url: { pathname: '/v1/chat/completions' } };
  const config = parseConfigHeader(header);

  const time = async (fn: () => Promise<unknown>) => {
    for (let i = 0; i < 2_000; i++) await fn();
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) await fn();
    return Number(process.hrtime.bigint() - start) / iterations / 1_000;
  };
  const execute = await time(() => executor.execute(config, { ctx }));
  const withValidation = await time(() => executor.execute(parseConfigHeader(header), { ctx }));
  return {
    iterations,
    execute_us: Math.round(execute * 100) / 100,
    execute_with_validation_us: Math.round(withValidation * 100) / 100,
  };
}
