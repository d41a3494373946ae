/**
 * The MCP conformance suite's "everything" server (server scenarios of `@modelcontextprotocol/conformance`
 * 0.1.16, `examples/servers/typescript/everything-server.ts`, MIT), built with the official SDK and
 * served over Streamable HTTP on a loopback port with node:http instead of express. Same tools,
 * resources (a template among them), prompts, logging, completion, sessions and event store (SSE
 * resumption), and the same server-to-client requests: sampling and elicitation are sent with
 * `server.request` during the tool call, as the reference does (they go to the client's GET stream,
 * so they are lost when the call reaches the server before that stream). Like the reference, it
 * refuses a Host other than a loopback name (403, DNS rebinding). Only the SSE retry interval is
 * shorter, so that the polling scenario does not wait 5 s; `getDelayMs` makes a GET stream take
 * that long to open.
 */
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport, type EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { toJsonSchemaCompat } from '@modelcontextprotocol/sdk/server/zod-json-schema-compat.js';
import { ElicitResultSchema, ListToolsRequestSchema, type JSONRPCMessage, type ListToolsResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';

export interface McpEverythingOptions {
  /** A GET (the client's stream) is opened this much later than it arrived. */
  getDelayMs?: number;
}

export interface McpEverything {
  /** The Streamable HTTP endpoint (`.../mcp`). */
  url: string;
  /** What reached the server, in order: `GET`, `DELETE`, or the JSON-RPC method (`response` for a client's answer). */
  arrivals: string[];
  close(): Promise<void>;
}

const IMAGE = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const AUDIO = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';
const RETRY_MS = 200;

/** SEP-1613: a raw JSON Schema 2020-12 the listing must carry unchanged. */
const SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object' as const,
  $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
  properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
  additionalProperties: false,
};

const DEFAULTS_SCHEMA = {
  type: 'object' as const,
  properties: {
    name: { type: 'string' as const, description: 'User name', default: 'John Doe' },
    age: { type: 'integer' as const, description: 'User age', default: 30 },
    score: { type: 'number' as const, description: 'User score', default: 95.5 },
    status: { type: 'string' as const, description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
    verified: { type: 'boolean' as const, description: 'Verification status', default: true },
  },
  required: [],
};

const ENUMS_SCHEMA = {
  type: 'object' as const,
  properties: {
    untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
    titledSingle: {
      type: 'string',
      description: 'Select one option with titles',
      oneOf: [
        { const: 'value1', title: 'First Option' },
        { const: 'value2', title: 'Second Option' },
        { const: 'value3', title: 'Third Option' },
      ],
    },
    legacyEnum: {
      type: 'string',
      description: 'Select one option (legacy)',
      enum: ['opt1', 'opt2', 'opt3'],
      enumNames: ['Option One', 'Option Two', 'Option Three'],
    },
    untitledMulti: {
      type: 'array',
      description: 'Select multiple options',
      minItems: 1,
      maxItems: 3,
      items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    },
    titledMulti: {
      type: 'array',
      description: 'Select multiple options with titles',
      minItems: 1,
      maxItems: 3,
      items: {
        anyOf: [
          { const: 'value1', title: 'First Choice' },
          { const: 'value2', title: 'Second Choice' },
          { const: 'value3', title: 'Third Choice' },
        ],
      },
    },
  },
  required: [],
};

/** An in-memory event store (SEP-1699 resumability), as the reference keeps one. */
function eventStore(): EventStore {
  const events = new Map<string, { message: JSONRPCMessage; streamId: string }>();
  return {
    async storeEvent(streamId, message) {
      const id = `${streamId}::${Date.now()}_${randomUUID()}`;
      events.set(id, { message, streamId });
      return id;
    },
    async replayEventsAfter(lastEventId, { send }) {
      const streamId = lastEventId.split('::')[0] ?? '';
      const later = [...events.entries()].filter(([id, e]) => e.streamId === streamId && id > lastEventId).sort(([a], [b]) => a.localeCompare(b));
      for (const [id, e] of later) if (Object.keys(e.message).length > 0) await send(id, e.message);
      return streamId;
    },
  };
}

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function registerTools(server: McpServer, transports: Map<string, StreamableHTTPServerTransport>): void {
  server.registerTool('test_simple_text', { description: 'Tests simple text content response', inputSchema: {} }, async () =>
    text('This is a simple text response for testing.'),
  );
  server.registerTool('test_image_content', { description: 'Tests image content response' }, async () => ({
    content: [{ type: 'image', data: IMAGE, mimeType: 'image/png' }],
  }));
  server.registerTool('test_audio_content', { description: 'Tests audio content response' }, async () => ({
    content: [{ type: 'audio', data: AUDIO, mimeType: 'audio/wav' }],
  }));
  server.registerTool('test_embedded_resource', { description: 'Tests embedded resource content response' }, async () => ({
    content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
  }));
  server.registerTool('test_multiple_content_types', { description: 'Tests response with multiple content types (text, image, resource)' }, async () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: IMAGE, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) },
      },
    ],
  }));
  server.registerTool(
    'test_tool_with_logging',
    { description: 'Tests tool that emits log messages during execution', inputSchema: {} },
    async (_args, { sendNotification }) => {
      for (const [i, data] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
        if (i > 0) await sleep(50);
        await sendNotification({ method: 'notifications/message', params: { level: 'info', data } });
      }
      return text('Tool with logging executed successfully');
    },
  );
  server.registerTool(
    'test_tool_with_progress',
    { description: 'Tests tool that reports progress notifications', inputSchema: {} },
    async (_args, { sendNotification, _meta }) => {
      const progressToken = _meta?.progressToken ?? 0;
      for (const progress of [0, 50, 100]) {
        if (progress > 0) await sleep(50);
        await sendNotification({
          method: 'notifications/progress',
          params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` },
        });
      }
      return text(String(progressToken));
    },
  );
  server.registerTool('test_error_handling', { description: 'Tests error response handling' }, async () => {
    throw new Error('This tool intentionally returns an error for testing');
  });
  // SEP-1699: the server closes the call's SSE stream mid-call; the client reconnects and gets the answer.
  server.registerTool(
    'test_reconnection',
    { description: 'Tests SSE stream disconnection and client reconnection (SEP-1699)', inputSchema: {} },
    async (_args, { sessionId, requestId }) => {
      const transport = sessionId ? transports.get(sessionId) : undefined;
      if (transport && requestId !== undefined) transport.closeSSEStream(requestId);
      await sleep(100);
      return text('Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.');
    },
  );
  server.registerTool(
    'test_sampling',
    { description: 'Tests server-initiated sampling (LLM completion request)', inputSchema: { prompt: z.string().describe('The prompt to send to the LLM') } },
    async (args) => {
      try {
        const result = (await server.server.request(
          { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: args.prompt } }], maxTokens: 100 } },
          z.looseObject({}),
        )) as { content?: { text?: string } };
        return text(`LLM response: ${result.content?.text ?? 'No response'}`);
      } catch (err) {
        return text(`Sampling not supported or error: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
  );
  const elicit = (
    name: string,
    description: string,
    message: (args: Record<string, unknown>) => string,
    requestedSchema: Record<string, unknown>,
    label: string,
  ) =>
    server.registerTool(
      name,
      { description, inputSchema: name === 'test_elicitation' ? { message: z.string().describe('The message to show the user') } : {} },
      async (args: Record<string, unknown>) => {
        try {
          const result = await server.server.request(
            { method: 'elicitation/create', params: { message: message(args), requestedSchema: requestedSchema as never } },
            ElicitResultSchema,
          );
          return text(`${label}: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
        } catch (err) {
          return text(`Elicitation not supported or error: ${err instanceof Error ? err.message : String(err)}`);
        }
      },
    );
  elicit(
    'test_elicitation',
    'Tests server-initiated elicitation (user input request)',
    (a) => String(a.message),
    { type: 'object', properties: { response: { type: 'string', description: "User's response" } }, required: ['response'] },
    'User response',
  );
  elicit(
    'test_elicitation_sep1034_defaults',
    'Tests elicitation with default values per SEP-1034',
    () => 'Please review and update the form fields with defaults',
    DEFAULTS_SCHEMA,
    'Elicitation completed',
  );
  elicit(
    'test_elicitation_sep1330_enums',
    'Tests elicitation with enum schema improvements per SEP-1330',
    () => 'Please select options from the enum fields',
    ENUMS_SCHEMA,
    'Elicitation completed',
  );
  server.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)',
      inputSchema: { name: z.string().optional(), address: z.object({ street: z.string().optional(), city: z.string().optional() }).optional() },
    },
    async (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
  );
}

function registerResources(server: McpServer, subscriptions: Set<string>, log: (message: string) => void): void {
  const fixed = (name: string, uri: string, title: string, mimeType: string, body: { text: string } | { blob: string }) =>
    server.registerResource(name, uri, { title, description: `${title} for testing`, mimeType }, async () => ({ contents: [{ uri, mimeType, ...body }] }));
  fixed('static-text', 'test://static-text', 'Static Text Resource', 'text/plain', { text: 'This is the content of the static text resource.' });
  fixed('static-binary', 'test://static-binary', 'Static Binary Resource', 'image/png', { blob: IMAGE });
  fixed('watched-resource', 'test://watched-resource', 'Watched Resource', 'text/plain', { text: 'Watched resource content' });
  server.registerResource(
    'template',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { title: 'Resource Template', description: 'A resource template with parameter substitution', mimeType: 'application/json' },
    async (uri, { id }) => ({
      contents: [{ uri: uri.toString(), mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${String(id)}` }) }],
    }),
  );
  const uriOf = (r: Record<string, unknown>) => String((r.params as { uri?: unknown } | undefined)?.uri);
  server.server.setRequestHandler(z.looseObject({ method: z.literal('resources/subscribe') }), async (r) => {
    subscriptions.add(uriOf(r));
    log(`Subscribed to resource: ${uriOf(r)}`);
    return {};
  });
  server.server.setRequestHandler(z.looseObject({ method: z.literal('resources/unsubscribe') }), async (r) => {
    subscriptions.delete(uriOf(r));
    log(`Unsubscribed from resource: ${uriOf(r)}`);
    return {};
  });
}

function registerPrompts(server: McpServer): void {
  const user = (t: string) => ({ role: 'user' as const, content: { type: 'text' as const, text: t } });
  server.registerPrompt('test_simple_prompt', { title: 'Simple Test Prompt', description: 'A simple prompt without arguments' }, async () => ({
    messages: [user('This is a simple prompt for testing.')],
  }));
  server.registerPrompt(
    'test_prompt_with_arguments',
    {
      title: 'Prompt With Arguments',
      description: 'A prompt with required arguments',
      argsSchema: { arg1: z.string().describe('First test argument'), arg2: z.string().describe('Second test argument') },
    },
    async ({ arg1, arg2 }) => ({ messages: [user(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`)] }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    {
      title: 'Prompt With Embedded Resource',
      description: 'A prompt that includes an embedded resource',
      argsSchema: { resourceUri: z.string().describe('URI of the resource to embed') },
    },
    async ({ resourceUri }) => ({
      messages: [
        { role: 'user', content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
        user('Please process the embedded resource above.'),
      ],
    }),
  );
  server.registerPrompt('test_prompt_with_image', { title: 'Prompt With Image', description: 'A prompt that includes image content' }, async () => ({
    messages: [{ role: 'user', content: { type: 'image', data: IMAGE, mimeType: 'image/png' } }, user('Please analyze the image above.')],
  }));
}

interface Registered {
  enabled: boolean;
  title?: string;
  description?: string;
  inputSchema?: unknown;
  annotations?: Tool['annotations'];
  _meta?: Tool['_meta'];
}

function buildServer(transports: Map<string, StreamableHTTPServerTransport>, subscriptions: Set<string>): McpServer {
  const server = new McpServer(
    { name: 'mcp-conformance-test-server', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {},
      },
    },
  );
  const log = (data: string) =>
    void server.server
      .notification({ method: 'notifications/message', params: { level: 'info', logger: 'conformance-test-server', data } })
      .catch(() => undefined);
  registerTools(server, transports);
  registerResources(server, subscriptions, log);
  registerPrompts(server);
  server.server.setRequestHandler(z.looseObject({ method: z.literal('logging/setLevel') }), async (r) => {
    log(`Log level set to: ${String((r.params as { level?: unknown } | undefined)?.level)}`);
    return {};
  });
  server.server.setRequestHandler(z.looseObject({ method: z.literal('completion/complete') }), async () => ({
    completion: { values: [], total: 0, hasMore: false },
  }));
  // The listing carries the 2020-12 schema as written (registerTool would convert it).
  server.server.setRequestHandler(ListToolsRequestSchema, (): ListToolsResult => {
    const tools = (server as unknown as { _registeredTools: Record<string, Registered> })._registeredTools;
    return {
      tools: Object.entries(tools)
        .filter(([, t]) => t.enabled)
        .map(([name, t]): Tool => {
          if (name === 'json_schema_2020_12_tool') return { name, description: t.description, inputSchema: SCHEMA_2020_12 };
          const inputSchema = t.inputSchema
            ? (toJsonSchemaCompat(t.inputSchema as never, { strictUnions: true, pipeStrategy: 'input' }) as Tool['inputSchema'])
            : { type: 'object' as const, properties: {} };
          return { name, title: t.title, description: t.description, inputSchema, annotations: t.annotations, _meta: t._meta };
        }),
    };
  });
  return server;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const parts: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) parts.push(c);
  const raw = Buffer.concat(parts).toString('utf8');
  return raw ? (JSON.parse(raw) as unknown) : undefined;
}

const refuse = (res: ServerResponse, status: number, message: string) =>
  void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

export async function startMcpEverything(opts: McpEverythingOptions = {}): Promise<McpEverything> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const subscriptions = new Set<string>();
  const arrivals: string[] = [];

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return void res.writeHead(404).end();
    if (!LOOPBACK.has(new URL(`http://${req.headers.host ?? ''}`).hostname)) return refuse(res, 403, `Invalid Host header: ${String(req.headers.host)}`);
    const sid = req.headers['mcp-session-id'];
    const existing = typeof sid === 'string' ? transports.get(sid) : undefined;
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    arrivals.push(req.method === 'POST' ? ((body as { method?: string } | undefined)?.method ?? 'response') : (req.method ?? ''));
    if (req.method === 'GET' && opts.getDelayMs) await sleep(opts.getDelayMs);
    if (existing) return existing.handleRequest(req, res, body);
    if (req.method !== 'POST' || sid !== undefined || (body as { method?: unknown } | undefined)?.method !== 'initialize')
      return refuse(res, 400, 'Invalid or missing session ID');
    const server = buildServer(transports, subscriptions);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: eventStore(),
      retryInterval: RETRY_MS,
      onsessioninitialized: (id) => void transports.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) transports.delete(transport.sessionId);
      void server.close();
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const http_ = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) refuse(res, 500, String(err));
    });
  });
  await new Promise<void>((resolve) => http_.listen(0, '127.0.0.1', resolve));
  const { port } = http_.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    arrivals,
    async close() {
      for (const t of transports.values()) await t.close().catch(() => undefined);
      http_.closeAllConnections();
      await new Promise<void>((resolve) => http_.close(() => resolve()));
    },
  };
}
