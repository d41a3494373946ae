/**
 * The MCP gateway: `/mcp/{server-slug}` (and Portkey's `/{server-slug}/mcp`), Streamable HTTP.
 * `Host` and `Origin` are checked first (DNS rebinding, origin.ts). Then the same phases as a
 * model request up to the upstream call (open the record, authenticate from the headers, admit
 * with every hook: limits match `endpoint_type: mcp`), then the server's route and the caller's
 * access to it, the allow-list on each JSON-RPC message (a hidden capability is refused here; a
 * message with a key twice before that), the sealed session opened, and the messages that were
 * checked, serialised again, relayed to the MCP server with the integration's credentials once
 * the session's GET stream is open upstream (order.ts). Its answer (JSON or SSE) comes back with
 * listings filtered.
 */
import type { AppConfig } from '../../config.ts';
import type { CoreDeps } from '../../deps.ts';
import { ForbiddenError, NotFoundError } from '../../http/errors.ts';
import { readBodyText, textResponse, type RuntimeBindings } from '../../http/bodies.ts';
import type { GatewayPrincipal } from '../../gateway/access.ts';
import { refuseThrown } from '../../gateway/answer.ts';
import type { EndpointSpec, HttpMethod } from '../../gateway/endpoint.ts';
import { openRecord, type Flight } from '../../gateway/flight.ts';
import { admit } from '../../gateway/pipeline.ts';
import { authenticate } from '../../gateway/resolve.ts';
import type { McpRoute } from '../../store/mcp.ts';
import { isListing, refusalOf, targetOf } from './allow.ts';
import { asRequest, parseMessages, rpcError, type JsonRpcId, type JsonRpcMessage } from './jsonrpc.ts';
import { answerUpstream, type McpCall } from './relay.ts';
import { originPolicy, originRefusal, type OriginPolicy } from './origin.ts';
import { expectStream, takeTurn } from './order.ts';
import { McpRouteCache } from './routes-cache.ts';
import { openSession, SessionRefusal } from './session.ts';

const MAX_BODY_BYTES = 4 << 20;

const caches = new WeakMap<CoreDeps, McpRouteCache>();
const routeCache = (deps: CoreDeps): McpRouteCache => {
  let c = caches.get(deps);
  if (!c) caches.set(deps, (c = new McpRouteCache(deps)));
  return c;
};

const policies = new WeakMap<AppConfig, OriginPolicy>();
const policyOf = (config: AppConfig): OriginPolicy => {
  let p = policies.get(config);
  if (!p) policies.set(config, (p = originPolicy(config)));
  return p;
};

export async function handleMcp(req: Request, deps: CoreDeps, slug: string, bindings?: RuntimeBindings): Promise<Response> {
  // Before anything asynchronous: the order in which the session's requests arrived.
  const turn = takeTurn(req.headers.get('mcp-session-id'), req.method);
  const spec: EndpointSpec = { endpoint: 'mcp', method: req.method as HttpMethod, body: 'raw' };
  const f = openRecord(spec, req, deps, undefined);
  f.record.mcp = { server: slug, method: req.method };
  f.record.provider = `mcp:${slug}`;
  try {
    const refusal = originRefusal(req, policyOf(deps.config));
    if (refusal) throw new ForbiddenError(refusal, { openaiCode: 'mcp_origin_not_allowed' });
    const principal = await authenticate(f);
    const route = await routeFor(deps, principal, slug);
    await admit(f);
    const call = req.method === 'POST' ? await readCall(f, req, route) : emptyCall();
    if (call.answer) return rpcAnswer(f, call.answer.status, call.answer.body);
    if (call.initialized) expectStream(req.headers.get('mcp-session-id'));
    const upstreamSession = await sessionOf(f, req, route, principal);
    await turn.ready;
    return await answerUpstream(f, req, { route, principal, call, upstreamSession, signal: bindings?.clientSignal });
  } catch (err) {
    if (err instanceof SessionRefusal) return rpcAnswer(f, err.status, rpcError(null, err.status === 404 ? -32001 : -32600, err.message));
    return refuseThrown(f, err);
  } finally {
    turn.sent();
  }
}

/** The server by slug in the caller's organisation; 404 unknown, 403 another workspace's or a user denied. */
async function routeFor(deps: CoreDeps, principal: GatewayPrincipal, slug: string): Promise<McpRoute> {
  const route = await routeCache(deps).get(principal.organisationId, slug);
  if (!route) throw new NotFoundError(`No MCP server ${slug} in this organisation`, { openaiCode: 'mcp_server_not_found' });
  if (route.server.workspaceId !== principal.workspaceId) throw new ForbiddenError(`The MCP server ${slug} belongs to another workspace`);
  const access = (principal.userId ? route.userAccess.users.get(principal.userId) : undefined) ?? route.userAccess.default;
  if (access !== 'allow') throw new ForbiddenError(`This user may not use the MCP server ${slug}`);
  return route;
}

interface ReadCall extends McpCall {
  /** Answered here without the upstream: unparsable, or every request in it refused. */
  answer?: { status: number; body: unknown };
  /** It carries `notifications/initialized`: the client's GET stream should follow. */
  initialized?: boolean;
}

const emptyCall = (): ReadCall => ({ body: undefined, pending: new Map(), refusals: [], batch: false });

/** The body's messages: refusals made here, the rest to send on, and the listings to filter. */
async function readCall(f: Flight, req: Request, route: McpRoute): Promise<ReadCall> {
  const text = await readBodyText(req, MAX_BODY_BYTES);
  const parsed = parseMessages(text);
  if ('error' in parsed) return { ...emptyCall(), answer: { status: 400, body: parsed } };
  const { messages, batch } = parsed;
  const pending = new Map<JsonRpcId, string>();
  const refusals: JsonRpcMessage[] = [];
  const forward: JsonRpcMessage[] = [];
  for (const m of messages) {
    const r = asRequest(m);
    const refusal = r && refusalOf(r, route.allowed);
    if (refusal) refusals.push(refusal as unknown as JsonRpcMessage);
    else forward.push(m);
    if (r && isListing(r.method)) pending.set(r.id, r.method);
  }
  noteCall(f, messages);
  if (forward.length === 0) return { ...emptyCall(), answer: { status: 200, body: batch ? refusals : refusals[0] } };
  // What the allow-list checked, serialised again: never the client's own bytes.
  const body = JSON.stringify(batch ? forward : forward[0]);
  return { body, pending, refusals, batch, initialized: forward.some((m) => m.method === 'notifications/initialized') };
}

/** The log's view: the method and the name it targets (a batch is method `batch`). */
function noteCall(f: Flight, messages: readonly JsonRpcMessage[]): void {
  const first = messages.length === 1 ? asRequest(messages[0]!) : undefined;
  const method = messages.length > 1 ? 'batch' : typeof messages[0]?.method === 'string' ? messages[0].method : 'response';
  const target = first && targetOf(first);
  const name = typeof target?.name === 'string' ? target.name : undefined;
  f.record.mcp = { server: f.record.mcp?.server ?? '', method, ...(name ? { name } : {}) };
  f.record.model = name ?? method;
  f.record.request = messages.length === 1 ? { ...messages[0] } : { batch: messages };
}

/** The upstream's session id from the client's sealed token; undefined when the client sent none. */
async function sessionOf(f: Flight, req: Request, route: McpRoute, principal: GatewayPrincipal): Promise<string | undefined> {
  const token = req.headers.get('mcp-session-id');
  if (token === null) return undefined;
  return openSession(f.deps.cipher, token, { principal: principal.keyId, serverId: route.server.id }, f.deps.clock.now());
}

/** An answer made here (a JSON-RPC error or refusals), recorded like any other. */
function rpcAnswer(f: Flight, status: number, body: unknown): Response {
  f.record.status = status;
  f.record.response = body;
  f.record.endedAt = f.deps.clock.now();
  if (status >= 400) {
    const error = (body as { error?: { message?: string } }).error;
    f.record.errorCode = 'mcp_refused';
    f.record.errorMessage = error?.message ?? 'refused';
  }
  f.done();
  return textResponse(JSON.stringify(body), { status, headers: { ...f.out, 'content-type': 'application/json' } });
}
