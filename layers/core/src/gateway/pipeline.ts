/**
 * The gateway pipeline shared by every endpoint, the passthrough included, as a script of named
 * phases: open the record, authenticate, read the input, resolve the config, admit (hooks), build
 * the target caller (decorators composed in compose.ts), execute the routing engine, answer. A new
 * step joins as a phase here or as a caller decorator in compose.ts; a wire format other than
 * OpenAI's joins as a dialect (dialect.ts) passed in by its route. Errors always come back in
 * OpenAI's shape (or the dialect's) with the trace id.
 */
import type { CoreDeps } from '../deps.ts';
import type { RuntimeBindings } from '../http/bodies.ts';
import { answeredByFallback } from '../observability/routing-facts.ts';
import { answer, refuseThrown } from './answer.ts';
import { buildCaller } from './compose.ts';
import type { Dialect } from './dialect.ts';
import type { EndpointSpec, PromptCall } from './endpoint.ts';
import { openRecord, type Flight } from './flight.ts';
import { readInput, type Input, type RouteMatch } from './input.ts';
import type { Principal } from '../kernel/principal.ts';
import { authenticate, resolve, type Resolved } from './resolve.ts';
import { RoutingExecutor, type Outcome, type TargetCaller } from './routing/execute.ts';

export type { EndpointSpec } from './endpoint.ts';
export type { RouteMatch } from './input.ts';

export async function handleGatewayRequest(
  spec: EndpointSpec,
  req: Request,
  deps: CoreDeps,
  bindings?: RuntimeBindings,
  route: RouteMatch = {},
  dialect?: Dialect,
): Promise<Response> {
  const f = openRecord(spec, req, deps, dialect);
  try {
    const principal = await authenticate(f);
    const input = await readInput(f, spec.prompt ? await renderPrompt(f, req, route, principal, spec.prompt) : req, route);
    const resolved = await resolve(f, principal);
    await admit(f);
    const call = buildCaller(f, input, resolved);
    const outcome = await execute(f, call, input, resolved, bindings?.clientSignal);
    return await answer(f, outcome, input);
  } catch (err) {
    return refuseThrown(f, err);
  }
}

/** A prompt call's body becomes the request it stands for (prompt-input.ts, imported on first use). */
let promptPhase: Promise<typeof import('./prompt-input.ts')> | undefined;
async function renderPrompt(f: Flight, req: Request, route: RouteMatch, principal: Principal, call: PromptCall): Promise<Request> {
  const { withPrompt } = await (promptPhase ??= import('./prompt-input.ts'));
  return withPrompt(f, req, route, principal, call);
}

/**
 * Every hook admits the request before any provider call. Their headers (the limits'
 * `x-ratelimit-*`) go on every answer once all admitted it; they override a provider's own, as the
 * gateway's limit is the one the client meets.
 */
export async function admit(f: Flight): Promise<void> {
  const admitted: Record<string, string> = {};
  for (const hook of f.deps.gatewayHooks) Object.assign(admitted, await hook.admit?.(f.record));
  Object.assign(f.out, admitted);
}

/** Runs the routing engine and notes where the answer came from. */
async function execute(f: Flight, call: TargetCaller, input: Input, resolved: Resolved, signal: AbortSignal | undefined): Promise<Outcome> {
  const { record, out } = f;
  const executor = new RoutingExecutor({ clock: f.deps.clock, call });
  record.executeStartedAt = f.deps.clock.now();
  const outcome = await executor.execute(resolved.config, {
    ctx: { metadata: record.metadata, params: input.fields, url: { pathname: record.path } },
    ...(resolved.headerProvider ? { base: { provider: resolved.headerProvider } } : {}),
    signal,
  });
  record.upstreamHeadersAt = f.deps.clock.now();
  record.targetPath = outcome.target.path;
  record.retries = outcome.retries;
  if (answeredByFallback(resolved.config, outcome.target.path)) record.fallback = true;
  if (outcome.target.provider) record.provider = out['x-gw-provider'] = outcome.target.provider;
  if (outcome.cacheStatus) record.cacheStatus = out['x-gw-cache-status'] = outcome.cacheStatus;
  out['x-gw-last-used-option-index'] = outcome.target.path;
  out['x-gw-retry-attempt-count'] = String(outcome.retries);
  return outcome;
}
