/**
 * The gateway's phases in the unit lane: a `CoreDeps` with its ports faked in memory and ONLY these
 * fields present:
 * - `config` (loadConfig with the env given), `clock` (ManualClock), `logger` (records its lines),
 *   `upstream` (FakeUpstream), `trustedHosts`, `gatewayHooks`;
 * - `keyAuth`: only `authenticateRequest`, which knows one key (UNIT_KEY) and its principal;
 * - `savedConfigs`: configs by id or slug in a map (the SavedConfigSource contract);
 * - `pricing`: only the `Pricer` part (`costMicros`) that answers and hooks price with;
 * - `prompts`: a PromptSource when given (test/support/prompts.ts has one).
 * Any other field (repos, the response cache, limits, managed providers, secrets, queues ...) is a
 * tripwire: a reference may be taken, but using it throws, naming it. A phase that needs one is
 * tested in the integration lane, on DynamoDB Local: the project has no in-memory imitation of it.
 */
import { loadConfig } from '../../layers/core/src/config.ts';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import type { EndpointSpec } from '../../layers/core/src/gateway/endpoint.ts';
import { GATEWAY_ROUTES } from '../../layers/core/src/gateway/routes.ts';
import { AuthenticationError, GantryError } from '../../layers/core/src/http/errors.ts';
import type { GatewayHook, GatewayRecord } from '../../layers/core/src/kernel/lifecycle.ts';
import type { Principal } from '../../layers/core/src/kernel/principal.ts';
import type { KeyAuthenticator } from '../../layers/core/src/policy/key-auth.ts';
import type { ConfigNode } from '../../layers/core/src/kernel/routing.ts';
import type { Pricer } from '../../layers/core/src/kernel/usage.ts';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import type { Logger } from '../../layers/core/src/ports/logger.ts';
import type { PromptSource } from '../../layers/core/src/prompts/contract.ts';
import { TrustedHosts } from '../../layers/core/src/security/ssrf.ts';
import { FakeUpstream } from './fake-upstream.ts';
import { workspacePrincipal } from './identity.ts';

/** The one gateway key the fake authenticator knows. */
export const UNIT_KEY = 'gw_unit_test_key';

export interface LogLine {
  level: keyof Logger;
  message: string;
  attributes: Record<string, unknown>[];
}

export class RecordingLogger implements Logger {
  readonly lines: LogLine[] = [];
  debug(message: string, ...attributes: Record<string, unknown>[]): void {
    this.lines.push({ level: 'debug', message, attributes });
  }
  info(message: string, ...attributes: Record<string, unknown>[]): void {
    this.lines.push({ level: 'info', message, attributes });
  }
  warn(message: string, ...attributes: Record<string, unknown>[]): void {
    this.lines.push({ level: 'warn', message, attributes });
  }
  error(message: string, ...attributes: Record<string, unknown>[]): void {
    this.lines.push({ level: 'error', message, attributes });
  }
}

export interface UnitDepsOptions {
  /** The principal UNIT_KEY authenticates as (default: a workspace key with completions.write). */
  principal?: Principal;
  upstream?: FakeUpstream;
  hooks?: GatewayHook[];
  /** Saved configs by id or slug, in the principal's workspace. */
  savedConfigs?: Record<string, ConfigNode>;
  /** The price of a record in micro-dollars (default: 2 per token used). */
  costMicros?: Pricer['costMicros'];
  prompts?: PromptSource;
  /** Environment for loadConfig (GUARDRAILS_ENABLED ...). */
  env?: Record<string, string>;
  /** GW_TRUSTED_CUSTOM_HOSTS. */
  trustedHosts?: string;
}

/** The faked dependencies, with the fakes' own types where tests read them. */
export type UnitDeps = CoreDeps & { upstream: FakeUpstream; clock: ManualClock; logger: RecordingLogger };

/** The fields that are not faked: using one fails the test with where it belongs. */
const ABSENT: ReadonlySet<string> = new Set([
  'repos',
  'blobs',
  'mailer',
  'queues',
  'responseCache',
  'vectorIndex',
  'limits',
  'cipher',
  'managedProviders',
  'secrets',
]);

const keyAuthFor = (principal: Principal): Pick<KeyAuthenticator, 'authenticateRequest'> => ({
  authenticateRequest: async (headers) => {
    const key = headers.get('x-gw-api-key');
    if (!key) throw new AuthenticationError('Missing credentials: send an API key in the x-gw-api-key header');
    if (key !== UNIT_KEY) throw new AuthenticationError();
    return principal;
  },
});

const savedConfigsOf = (configs: Record<string, ConfigNode>, principal: Principal): CoreDeps['savedConfigs'] => ({
  forGateway: async (p, idOrSlug) => (p.workspaceId === principal.workspaceId ? configs[idOrSlug] : undefined),
  invalidate: () => {},
});

const tokensPriced: Pricer['costMicros'] = (record: GatewayRecord) => (record.usage ? record.usage.total_tokens * 2 : undefined);

export function unitDeps(opts: UnitDepsOptions = {}): UnitDeps {
  const principal = opts.principal ?? workspacePrincipal();
  const present = {
    config: loadConfig({ TABLE_NAME: 'unit', LOG_LEVEL: 'SILENT', ...opts.env }),
    clock: new ManualClock(),
    logger: new RecordingLogger(),
    upstream: opts.upstream ?? new FakeUpstream(),
    trustedHosts: TrustedHosts.parse(opts.trustedHosts ?? ''),
    gatewayHooks: opts.hooks ?? [],
    keyAuth: keyAuthFor(principal),
    savedConfigs: savedConfigsOf(opts.savedConfigs ?? {}, principal),
    pricing: { costMicros: opts.costMicros ?? tokensPriced },
    ...(opts.prompts ? { prompts: opts.prompts } : {}),
  };
  const absent = new Map([...ABSENT].map((name) => [name, tripwire(name)]));
  // Only the fields above are there (see the file's comment): the cast says what the phases may read.
  return new Proxy(present, {
    get: (target, name, receiver) => (typeof name === 'string' && absent.has(name) ? absent.get(name) : Reflect.get(target, name, receiver)),
  }) as unknown as UnitDeps;
}

/**
 * What an absent field is: a reference may be taken (a decorator built for a request that will not
 * use it), but any use of it fails with where the test belongs.
 */
function tripwire(field: string): object {
  return new Proxy(
    {},
    {
      get(_, name) {
        if (typeof name === 'symbol' || name === 'then') return undefined;
        throw new Error(`unitDeps: deps.${field}.${name} is not faked in the unit lane; test this through DynamoDB Local (INTEGRATION in vitest.config.ts)`);
      },
    },
  );
}

/** The endpoint spec of a gateway route, as the router hands it to the pipeline. */
export function specOf(method: string, path: string): EndpointSpec {
  const route = GATEWAY_ROUTES.find((r) => r.spec.method === method && r.path === path);
  if (!route) throw new Error(`no gateway route ${method} ${path}`);
  return route.spec;
}

export const CHAT: EndpointSpec = specOf('POST', '/chat/completions');

/** A client's gateway request: UNIT_KEY and a JSON body unless the headers or body say otherwise. */
export function gatewayRequest(path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Request {
  const headers: Record<string, string> = { 'x-gw-api-key': UNIT_KEY, ...init.headers };
  const hasBody = init.body !== undefined;
  if (hasBody && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
  return new Request(`http://gantry.test/v1${path}`, {
    method: init.method ?? (hasBody ? 'POST' : 'GET'),
    headers,
    ...(hasBody ? { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) } : {}),
  });
}

/** A chat request body. */
export const chatBody = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: 'Hi' }],
  ...over,
});

/** A hook that writes what it is asked, in order, into `events` (`name.admit`, `name.settle` ...). */
export function tracingHook(name: string, events: string[], over: Partial<GatewayHook> = {}): GatewayHook {
  return {
    name,
    admit: async () => void events.push(`${name}.admit`),
    admitTarget: async (_record, target) => void events.push(`${name}.admitTarget ${target.targetPath}`),
    settle: () => void events.push(`${name}.settle`),
    complete: () => void events.push(`${name}.complete`),
    ...over,
  };
}

/** Lets the hooks' `complete` (run with setImmediate once the response ended) happen. */
export const afterResponse = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The GantryError a phase refused with; fails the test when it resolved or threw something else. */
export async function refusal(p: Promise<unknown>): Promise<GantryError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof GantryError)) throw new Error(`expected a GantryError refusal, got ${err === undefined ? 'an answer' : String(err)}`);
  return err;
}
