/**
 * The call sent on to the MCP server and its answer relayed: JSON read whole (a listing filtered,
 * refusals made here joined to a batch), SSE passed through as it arrives (event by event when a
 * listing in it must be filtered, byte for byte otherwise). A session the server opens reaches the
 * client sealed; the server's own id never does.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { nodeStreamResponse, textResponse } from '../../http/bodies.ts';
import { readWithin, rewriteStream } from '../../http/node-streams.ts';
import { UpstreamError } from '../../http/errors.ts';
import type { GatewayPrincipal } from '../../gateway/access.ts';
import type { Flight } from '../../gateway/flight.ts';
import type { McpRoute } from '../../store/mcp.ts';
import { filterJsonAnswer, sseFilter, type PendingListings } from './answers.ts';
import type { JsonRpcMessage } from './jsonrpc.ts';
import { sealSession } from './session.ts';
import { sendWithCredentials } from './upstream.ts';

export interface McpCall {
  /** The body to send on (refused messages taken out of a batch); undefined for GET and DELETE. */
  body: string | undefined;
  pending: PendingListings;
  refusals: readonly JsonRpcMessage[];
  batch: boolean;
}

export interface RelayContext {
  route: McpRoute;
  principal: GatewayPrincipal;
  call: McpCall;
  upstreamSession: string | undefined;
  signal: AbortSignal | undefined;
}

/** Client headers the server needs; never its credentials or the gateway's own. */
const FORWARDED = ['accept', 'content-type', 'mcp-protocol-version', 'last-event-id'] as const;
const MAX_JSON_ANSWER_BYTES = 16 << 20;

const one = (h: IncomingHttpHeaders, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

function outboundHeaders(req: Request, ctx: RelayContext): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of FORWARDED) {
    const v = req.headers.get(name);
    if (v) headers[name] = v;
  }
  if (req.method === 'POST') {
    headers['content-type'] ??= 'application/json';
    headers.accept ??= 'application/json, text/event-stream';
  }
  if (ctx.upstreamSession !== undefined) headers['mcp-session-id'] = ctx.upstreamSession;
  return headers;
}

/** The answer's headers: the server's content type and challenge, and its session sealed. */
async function answerHeaders(f: Flight, req: Request, ctx: RelayContext, up: IncomingHttpHeaders): Promise<Record<string, string>> {
  const out: Record<string, string> = { ...f.out };
  const type = one(up, 'content-type');
  if (type) out['content-type'] = type;
  const challenge = one(up, 'www-authenticate');
  if (challenge && ctx.route.upstream.authType === 'oauth') out['www-authenticate'] = challenge;
  const sid = one(up, 'mcp-session-id');
  if (sid !== undefined) {
    const presented = req.headers.get('mcp-session-id');
    out['mcp-session-id'] =
      sid === ctx.upstreamSession && presented
        ? presented
        : await sealSession(f.deps.cipher, { principal: ctx.principal.keyId, serverId: ctx.route.server.id }, sid, f.deps.clock.now());
  }
  return out;
}

export async function answerUpstream(f: Flight, req: Request, ctx: RelayContext): Promise<Response> {
  const { record, deps } = f;
  record.executeStartedAt = deps.clock.now();
  const method = req.method as 'POST' | 'GET' | 'DELETE';
  const up = await sendWithCredentials(deps, ctx.route, ctx.principal, { method, headers: outboundHeaders(req, ctx), body: ctx.call.body, signal: ctx.signal });
  record.upstreamHeadersAt = deps.clock.now();
  // The integration's own credentials refused: the gateway's failure, not the caller's key.
  if (up.status === 401 && ctx.route.upstream.authType !== 'oauth') {
    up.body.resume();
    throw new UpstreamError(502, `The MCP server ${ctx.route.server.slug} refused the integration's credentials (401)`);
  }
  const headers = await answerHeaders(f, req, ctx, up.headers);
  record.status = up.status;
  if ((headers['content-type'] ?? '').startsWith('text/event-stream')) return streamAnswer(f, up.status, up.body, headers, ctx);
  const bytes = await readWithin(up.body, MAX_JSON_ANSWER_BYTES, () => new UpstreamError(502, 'The MCP server answered more than 16 MiB of JSON'));
  const ok = up.status >= 200 && up.status < 300 && bytes.length > 0;
  const text = ok ? filterJsonAnswer(bytes.toString('utf8'), ctx.call.pending, ctx.route.allowed, ctx.call.refusals) : bytes.toString('utf8');
  finish(f, Buffer.byteLength(text), false);
  if (up.status === 202 || up.status === 204 || text.length === 0) return new Response(null, { status: up.status, headers });
  return textResponse(text, { status: up.status, headers });
}

function finish(f: Flight, bytes: number | null, cancelled: boolean): void {
  f.record.endedAt = f.deps.clock.now();
  if (bytes !== null) f.record.responseBytes = bytes;
  if (cancelled) f.record.cancelled = true;
  if (f.record.status !== undefined && f.record.status >= 400) f.record.errorCode ??= 'mcp_upstream_error';
  f.done();
}

/** SSE as it arrives: rewritten event by event only when a listing or a refusal is in it. */
function streamAnswer(f: Flight, status: number, source: Readable, headers: Record<string, string>, ctx: RelayContext): Response {
  f.record.stream = true;
  const { pending, refusals } = ctx.call;
  const body = pending.size > 0 || refusals.length > 0 ? rewriteStream(source, sseFilter(pending, ctx.route.allowed, refusals)) : source;
  // Only 'end' and 'close' are listened to: a 'data' listener would start the flow before the client reads.
  let ended = false;
  body.once('end', () => (ended = true));
  body.once('close', () => finish(f, null, !ended));
  return nodeStreamResponse(body, { status, headers: { ...headers, 'cache-control': 'no-cache' } });
}
