/**
 * A real MCP server for tests, built with the official SDK and served over Streamable HTTP on a
 * random loopback port. Two builds: stateful (the SDK hands out `Mcp-Session-Id` and refuses
 * requests without it) and stateless (a fresh server per request). Optionally it requires a static
 * header (proves the integration's headers are sent) and a bearer token that a test can expire
 * (answers 401 with a `WWW-Authenticate` challenge, as an OAuth-protected server does).
 */
import { randomUUID } from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import * as z from 'zod';

export interface McpUpstreamOptions {
  /** Sessions (`Mcp-Session-Id`) when true; a fresh server per request when false. */
  stateful?: boolean;
  /** JSON answers instead of an SSE stream per POST. */
  json?: boolean;
  /** Every request must carry this header with this value, else 403. */
  requiredHeader?: { name: string; value: string };
  /** Every request must carry `Authorization: Bearer <token>` with a currently valid token, else 401. */
  bearer?: { token: string };
  name?: string;
  version?: string;
  /** Tool names to offer (default: echo, add, delete_everything). */
  tools?: readonly string[];
}

export interface McpUpstreamRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** JSON-RPC methods in the body (`initialize`, `tools/call`, ...). */
  rpc: string[];
  /** `tools/call` names, `prompts/get` names and `resources/read` URIs in the body. */
  targets: string[];
  /** The body as received. */
  raw: string;
}

export interface McpUpstream {
  /** The Streamable HTTP endpoint (`.../mcp`). */
  url: string;
  /** The legacy HTTP+SSE endpoint (`.../sse`; messages posted to `.../messages`). */
  sseUrl: string;
  requests: McpUpstreamRequest[];
  /** Tool calls that reached the server, by tool name. */
  calls: string[];
  /** Makes every token issued so far invalid (401) and returns a fresh valid one. */
  expireToken(): string;
  /** Adds a tool seen by sessions started from now on (a server that grew a capability). */
  addTool(name: string): void;
  /** Open sessions (stateful build). */
  sessionCount(): number;
  close(): Promise<void>;
}

export const MCP_RESOURCES = [
  { name: 'readme', uri: 'file:///readme.md', text: '# Readme' },
  { name: 'secrets', uri: 'file:///secrets.txt', text: 'top secret' },
] as const;
export const MCP_PROMPTS = ['greeting', 'review'] as const;
export const MCP_DEFAULT_TOOLS = ['echo', 'add', 'delete_everything'] as const;

function buildServer(opts: McpUpstreamOptions, tools: readonly string[], calls: string[]): McpServer {
  const server = new McpServer({ name: opts.name ?? 'test-upstream', version: opts.version ?? '1.2.3' }, { capabilities: { logging: {} } });
  for (const name of tools) {
    server.registerTool(
      name,
      { description: `The ${name} tool`, inputSchema: { text: z.string().optional(), a: z.number().optional(), b: z.number().optional() } },
      (args) => {
        calls.push(name);
        const text = name === 'add' ? String((args.a ?? 0) + (args.b ?? 0)) : name === 'echo' ? (args.text ?? '') : `${name} done`;
        return { content: [{ type: 'text', text }] };
      },
    );
  }
  for (const name of MCP_PROMPTS) {
    server.registerPrompt(name, { description: `The ${name} prompt`, argsSchema: { who: z.string().optional() } }, (args) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `${name} ${args.who ?? 'you'}` } }],
    }));
  }
  for (const r of MCP_RESOURCES) {
    server.registerResource(r.name, r.uri, { description: `The ${r.name} resource`, mimeType: 'text/plain' }, (uri) => ({
      contents: [{ uri: uri.href, text: r.text }],
    }));
  }
  return server;
}

async function readJson(req: IncomingMessage): Promise<{ raw: string; body: unknown }> {
  const parts: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) parts.push(c);
  const raw = Buffer.concat(parts).toString('utf8');
  if (!raw) return { raw, body: undefined };
  try {
    return { raw, body: JSON.parse(raw) as unknown };
  } catch {
    return { raw, body: raw };
  }
}

function describe(body: unknown): { rpc: string[]; targets: string[] } {
  const msgs = (Array.isArray(body) ? body : [body]) as Array<{ method?: string; params?: { name?: string; uri?: string } }>;
  const rpc = msgs.flatMap((m) => (typeof m?.method === 'string' ? [m.method] : []));
  const targets = msgs.flatMap((m) => {
    const t = m?.params?.name ?? m?.params?.uri;
    return typeof t === 'string' && /^(tools\/call|prompts\/get|resources\/read)$/.test(m.method ?? '') ? [t] : [];
  });
  return { rpc, targets };
}

/** 401/403 when the request lacks the required header or a valid bearer token; true when answered. */
function refuse(opts: McpUpstreamOptions, valid: () => string | undefined, req: IncomingMessage, res: ServerResponse): boolean {
  const h = opts.requiredHeader;
  if (h && req.headers[h.name.toLowerCase()] !== h.value) {
    res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `missing or wrong ${h.name}` }));
    return true;
  }
  const token = valid();
  if (token !== undefined && req.headers.authorization !== `Bearer ${token}`) {
    res
      .writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer error="invalid_token", error_description="The access token expired"' })
      .end(JSON.stringify({ error: 'invalid_token' }));
    return true;
  }
  return false;
}

export async function startMcpUpstream(opts: McpUpstreamOptions = {}): Promise<McpUpstream> {
  const requests: McpUpstreamRequest[] = [];
  const calls: string[] = [];
  const tools = [...(opts.tools ?? MCP_DEFAULT_TOOLS)];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const sseSessions = new Map<string, SSEServerTransport>();
  let token = opts.bearer?.token;

  const streamable = async (req: IncomingMessage, res: ServerResponse, body: unknown) => {
    const sid = req.headers['mcp-session-id'];
    if (opts.stateful && typeof sid === 'string') {
      const t = sessions.get(sid);
      if (!t)
        return void res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
      return t.handleRequest(req, res, body);
    }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: opts.stateful ? () => randomUUID() : undefined,
      enableJsonResponse: opts.json ?? false,
      onsessioninitialized: (id) => void sessions.set(id, transport),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    const server = buildServer(opts, tools, calls);
    await server.connect(transport);
    if (!opts.stateful) res.on('close', () => void server.close());
    await transport.handleRequest(req, res, body);
  };

  const legacySse = async (req: IncomingMessage, res: ServerResponse, body: unknown, path: string) => {
    if (req.method === 'GET' && path === '/sse') {
      const transport = new SSEServerTransport('/messages', res);
      sseSessions.set(transport.sessionId, transport);
      res.on('close', () => void sseSessions.delete(transport.sessionId));
      await buildServer(opts, tools, calls).connect(transport);
      return;
    }
    const t = sseSessions.get(new URL(req.url ?? '', 'http://x').searchParams.get('sessionId') ?? '');
    if (!t) return void res.writeHead(404).end('no such SSE session');
    await t.handlePostMessage(req, res, body);
  };

  const server = http.createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const { raw, body } = req.method === 'POST' ? await readJson(req) : { raw: '', body: undefined };
      requests.push({ method: req.method ?? '', path, headers: req.headers, raw, ...describe(body) });
      if (refuse(opts, () => token, req, res)) return;
      if (path === '/mcp') return streamable(req, res, body);
      if (path === '/sse' || path === '/messages') return legacySse(req, res, body, path);
      res.writeHead(404).end();
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  return {
    url: `${base}/mcp`,
    sseUrl: `${base}/sse`,
    requests,
    calls,
    expireToken() {
      token = `tok-${randomUUID()}`;
      return token;
    },
    addTool: (name) => void tools.push(name),
    sessionCount: () => sessions.size,
    async close() {
      for (const t of [...sessions.values(), ...sseSessions.values()]) await t.close().catch(() => undefined);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
