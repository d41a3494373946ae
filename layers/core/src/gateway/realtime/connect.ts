/**
 * Opening a realtime session (`GET /v1/realtime?model=...` with `Upgrade: websocket`): the same
 * phases as any gateway request up to the provider call (open the record, authenticate from the
 * headers, resolve the config, admit with every hook), then the routing engine connects to the
 * provider's realtime WebSocket: a fallback applies to the connection attempt. Only once the
 * provider has accepted is the client's upgrade accepted; a refusal is an HTTP answer in OpenAI's
 * error shape and leaves a log like any refused request. A target with guardrail hooks gives the
 * session its guard (guard.ts, imported only then).
 */
import WebSocket from 'ws';
import type { CoreDeps } from '../../deps.ts';
import { GantryError, UpstreamError, ValidationError } from '../../http/errors.ts';
import net from 'node:net';
import tls from 'node:tls';
import { assertConnectedAddress, createGuardedLookup, type TrustedHosts } from '../../security/ssrf.ts';
import { withTargetAdmission } from '../admission.ts';
import { refuseThrown } from '../answer.ts';
import { clientKeyOf, withRequestOptions, type CallInput } from '../call-target.ts';
import type { EndpointSpec } from '../endpoint.ts';
import { openRecord, type Flight } from '../flight.ts';
import { GATEWAY_KEY_PREFIX, parseOptionHeaders } from '../headers.ts';
import { withManagedProviders } from '../managed.ts';
import { admit } from '../pipeline.ts';
import { authenticate, resolve, type Resolved } from '../resolve.ts';
import type { GatewayPrincipal } from '../access.ts';
import { RoutingExecutor, type TargetCaller } from '../routing/execute.ts';
import { HOOK_KEYS, type RoutedTarget } from '../routing/inherit.ts';
import type { ConfigNode, ResolvedTarget } from '../../kernel/routing.ts';
import { noteSentModel } from '../../kernel/usage.ts';
import type { RealtimeGuard } from './guard.ts';
import { realtimeDestination } from './targets.ts';
import { SecretSet } from '../scrub.ts';
import { requestSecrets, targetSecrets } from '../scrub-sent.ts';

export const REALTIME_SPEC: EndpointSpec = { endpoint: 'realtime', method: 'GET', body: 'none' };

/** The largest message accepted from the provider (audio deltas are far smaller). */
export const MAX_REALTIME_MESSAGE_BYTES = 16 << 20;

const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

export interface RealtimeSession {
  flight: Flight;
  /** The provider's socket, open. */
  upstream: WebSocket;
  /** The subprotocol to accept from the client's offer (never a credential one). */
  protocol: string | undefined;
  /** The guardrail hooks of the target connected to, when it has any. */
  guard: RealtimeGuard | undefined;
  /** The credentials sent on the provider's socket: masked in every message it sends (maskFrame). */
  secrets: SecretSet | undefined;
}

/** A session ready to relay, or the HTTP answer that refuses the upgrade. */
export async function openRealtime(req: Request, deps: CoreDeps): Promise<RealtimeSession | Response> {
  const prepared = await prepareRealtime(req, deps);
  if (prepared instanceof Response) return prepared;
  const { flight: f } = prepared;
  try {
    const { upstream, guard, secrets } = await connectUpstream(prepared);
    f.record.status = 101;
    return { flight: f, upstream, protocol: prepared.protocol, guard, secrets };
  } catch (err) {
    return refuseThrown(f, err);
  }
}

/** A session authenticated, routed and (unless told otherwise) admitted, its provider not yet contacted. */
export interface PreparedRealtime {
  flight: Flight;
  resolved: Resolved;
  model: string;
  protocol: string | undefined;
}

/**
 * Everything before the provider's socket: the record, authentication, the model, the config, and
 * admission by every hook. `admit: false` is for a session admitted already (API Gateway's relay
 * reopening its provider socket in another Lambda instance).
 */
export async function prepareRealtime(req: Request, deps: CoreDeps, opts: { admit: boolean } = { admit: true }): Promise<PreparedRealtime | Response> {
  const { headers, protocol } = subprotocolCredentials(req.headers);
  const f = openRecord(REALTIME_SPEC, new Request(req.url, { method: 'GET', headers }), deps, undefined);
  f.record.stream = true;
  try {
    const principal = await authenticate(f);
    const model = f.url.searchParams.get('model')?.trim();
    if (!model) throw ValidationError.field('model', 'is required: name the realtime model in the query (?model=...)');
    f.record.request = { model };
    const resolved = await resolve(f, principal);
    await checkHooks(f, resolved.config);
    if (opts.admit) await admit(f);
    return { flight: f, resolved, model, protocol };
  } catch (err) {
    return refuseThrown(f, err);
  }
}

/**
 * Browsers cannot set headers on a WebSocket: they send credentials as subprotocols
 * (`openai-insecure-api-key.<key>`, `openai-beta.realtime-v1`). A gateway key there authenticates
 * the upgrade; any other key is the provider key. Those are never accepted back or sent on.
 */
export function subprotocolCredentials(original: Headers): { headers: Headers; protocol: string | undefined } {
  const offered = (original.get('sec-websocket-protocol') ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const headers = new Headers(original);
  headers.delete('sec-websocket-protocol');
  let protocol: string | undefined;
  for (const p of offered) {
    if (p.startsWith('openai-insecure-api-key.')) {
      const key = p.slice('openai-insecure-api-key.'.length);
      if (key.startsWith(GATEWAY_KEY_PREFIX)) {
        if (!headers.get('x-gw-api-key')) headers.set('x-gw-api-key', key);
      } else if (!headers.get('authorization')) headers.set('authorization', `Bearer ${key}`);
    } else if (p === 'openai-beta.realtime-v1') {
      if (!headers.get('openai-beta')) headers.set('openai-beta', 'realtime=v1');
    } else protocol ??= p;
  }
  return { headers, protocol };
}

const loadGuard = () => import('./guard.ts');

const hasHooks = (lists: Partial<Record<string, unknown[]>> | undefined): boolean => lists !== undefined && HOOK_KEYS.some((k) => (lists[k]?.length ?? 0) > 0);

function configHasHooks(node: ConfigNode): boolean {
  return hasHooks(node as Partial<Record<string, unknown[]>>) || (node.targets?.some(configHasHooks) ?? false);
}

/** Configs whose hooks were checked against the checks (saved configs are cached objects). */
const checkedConfigs = new WeakSet<ConfigNode>();

/** A config's hooks name checks that exist with valid parameters (400 otherwise), as for HTTP requests. */
async function checkHooks(f: Flight, config: ConfigNode): Promise<void> {
  if (!f.deps.config.features.guardrails || checkedConfigs.has(config) || !configHasHooks(config)) return;
  (await loadGuard()).checkHookConfig(config);
  checkedConfigs.add(config);
}

/** The guard of a target with hooks (an unknown saved guardrail refuses the session). */
async function guardOf(f: Flight, principal: GatewayPrincipal, target: ResolvedTarget): Promise<RealtimeGuard | undefined> {
  if (!f.deps.config.features.guardrails || !hasHooks((target as Partial<RoutedTarget>).hooks)) return undefined;
  return (await loadGuard()).realtimeGuard(f, principal, target);
}

/** The provider's open socket, the guard of the target it belongs to, and the credentials sent on it. */
export interface Connected {
  upstream: WebSocket;
  guard: RealtimeGuard | undefined;
  secrets: SecretSet | undefined;
}

/** Runs the routing engine with a caller that opens the provider's socket; the first that opens wins. */
export async function connectUpstream({ flight: f, resolved, model }: PreparedRealtime): Promise<Connected> {
  const { deps, record, headers } = f;
  const input: CallInput = {
    endpoint: 'realtime',
    method: 'GET',
    body: { kind: 'none' },
    params: {},
    search: '',
    clientHeaders: headers,
    forwardHeaders: resolved.forwardHeaders,
    headerTimeoutMs: resolved.headerTimeoutMs,
    fromHeaders: resolved.fromHeaders,
    requestId: record.id,
  };
  let opened: WebSocket | undefined;
  let secrets: SecretSet | undefined;
  const params = { model };
  let call: TargetCaller = socketCaller(input, deps.trustedHosts, model, (ws, sent) => {
    opened = ws;
    secrets = sent;
  });
  call = withManagedProviders(call, deps, resolved.principal, { clientHeaders: headers, params });
  call = withTargetAdmission(call, deps.gatewayHooks, record, params);
  const sentModel = call;
  let guard: RealtimeGuard | undefined;
  call = async (target, signal) => {
    noteSentModel(record, target.override_params.model ?? model);
    // Resolved before the socket opens: a target whose hooks cannot be resolved is never connected.
    const hooks = await guardOf(f, resolved.principal, target);
    const attempt = await sentModel(target, signal);
    if (opened) guard ??= hooks;
    return attempt;
  };
  call = withRequestOptions(call, parseOptionHeaders(headers));

  const executor = new RoutingExecutor({ clock: deps.clock, call });
  record.executeStartedAt = deps.clock.now();
  const outcome = await executor.execute(resolved.config, {
    ctx: { metadata: record.metadata, params, url: { pathname: record.path } },
    ...(resolved.headerProvider ? { base: { provider: resolved.headerProvider } } : {}),
  });
  record.upstreamHeadersAt = deps.clock.now();
  record.targetPath = outcome.target.path;
  record.retries = outcome.retries;
  if (outcome.target.provider) record.provider = f.out['x-gw-provider'] = outcome.target.provider;
  if (opened) return { upstream: opened, guard, secrets };
  outcome.body?.destroy();
  throw (
    outcome.error ??
    new UpstreamError(outcome.status >= 400 ? outcome.status : 502, `The realtime provider refused the connection with status ${outcome.status}`)
  );
}

/**
 * The provider's TCP (or TLS) connection, checked once connected and before the handshake is
 * written: the address it reached must be allowed (never one of Gantry's own ports, on any address
 * of the machine), whatever name or redirect led there, as the HTTP upstream client checks it.
 */
function checkedConnection(url: URL, trusted: TrustedHosts): typeof net.createConnection {
  const connect = (options: net.NetConnectOpts & tls.ConnectionOptions): net.Socket => {
    // As ws's own connectors: `path` is the request's path here, never an IPC socket.
    const socket =
      url.protocol === 'wss:'
        ? tls.connect({ ...options, path: undefined, servername: options.servername ?? (net.isIP(url.hostname) ? '' : url.hostname) })
        : net.connect({ ...options, path: undefined } as net.NetConnectOpts);
    socket.once('connect', () => {
      try {
        assertConnectedAddress(socket, url.hostname, trusted);
      } catch (err) {
        socket.destroy(err as Error);
      }
    });
    return socket;
  };
  return connect as typeof net.createConnection;
}

/**
 * Opens the target's socket. Accepted: status 200 (so a fallback stops here). Refused by the
 * provider: its HTTP status, so a fallback or retry goes on. Unreachable: a 502 for the same.
 */
function socketCaller(input: CallInput, trusted: TrustedHosts, model: string, onOpen: (ws: WebSocket, secrets: SecretSet | undefined) => void): TargetCaller {
  const lookup = createGuardedLookup(trusted);
  return (target, signal) => {
    const { url, headers } = realtimeDestination(
      input,
      target,
      typeof target.override_params.model === 'string' ? target.override_params.model : model,
      trusted,
    );
    return new Promise((resolvePromise, reject) => {
      const ws = new WebSocket(url, {
        headers,
        lookup,
        createConnection: checkedConnection(url, trusted),
        perMessageDeflate: false,
        followRedirects: false,
        maxPayload: MAX_REALTIME_MESSAGE_BYTES,
        handshakeTimeout: input.headerTimeoutMs ?? target.request_timeout ?? DEFAULT_CONNECT_TIMEOUT_MS,
      });
      const abort = () => ws.terminate();
      signal?.addEventListener('abort', abort, { once: true });
      ws.once('open', () => {
        // The provider speaks first (session.created): held until the relay listens.
        ws.pause();
        signal?.removeEventListener('abort', abort);
        onOpen(ws, SecretSet.of([...requestSecrets(url, headers), ...targetSecrets(target, clientKeyOf(input))]));
        resolvePromise({ status: 200, headers: {} });
      });
      ws.once('unexpected-response', (_req, res) => {
        ws.removeAllListeners('error');
        ws.on('error', () => undefined);
        resolvePromise({ status: res.statusCode ?? 502, headers: res.headers, body: res });
      });
      ws.once('error', (err: Error & { code?: string }) => {
        if (err instanceof GantryError) return reject(err);
        reject(new UpstreamError(502, `The realtime provider at ${url.host} could not be reached${err.code ? ` (${err.code})` : ''}`));
      });
    });
  };
}
