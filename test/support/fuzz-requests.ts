/**
 * Generated HTTP requests for the fuzz test (test/e2e/fuzzed-input.test.ts): for one route of the
 * gateway or admin table, its method (sometimes another), its path with generated parameters
 * (plausible, over DynamoDB's key limits, any text, dot segments, bad percent-encoding), a query
 * string, headers (Gantry's own, with configs whose values hold line breaks, control characters and
 * characters past Latin-1 as JSON escapes, and UTF-8 bytes of other scripts as a client sends them)
 * and a body (the route's example or a chat-like object, mutated; any JSON; text that is not JSON).
 *
 * Every provider a request can name is reached through the local mock (`mock`), or refused before
 * any connection (not a URL, a blocked address): no request leaves the machine.
 */
import http from 'node:http';
import fc from 'fast-check';

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface FuzzContext {
  /** The mock provider's base URL (http://127.0.0.1:port). */
  mock: string;
  adminKey: string;
  workspaceKey: string;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND'] as const;

/** Characters no HTTP header can carry as they are, and some that can. */
const ODD_CHARS = ['\n', '\r\n', '\r', '\u0000', '\u0001', '\u007f', '\u2028', '\u{1F600}', '\u0101', '\u00e9', '\t', '"', '\\', ''];
const odd = fc.constantFrom(...ODD_CHARS);

/** Over DynamoDB's key limits (1,024 bytes for a sort key, 2,048 for a partition key), and far over. */
const LONG = ['x'.repeat(1_100), 'y'.repeat(2_100), 'z'.repeat(5_000)];

/** What a client that sends UTF-8 in a header puts on the wire: the bytes, read by the server as Latin-1. */
const utf8Bytes = (text: string): string => Buffer.from(text, 'utf8').toString('latin1');

/** A header value a client can send: printable ASCII, Latin-1 letters, UTF-8 bytes of other scripts, very long. */
const headerText = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 24 }) },
  { weight: 1, arbitrary: fc.constantFrom('caf\u00e9', utf8Bytes('\u043a\u043b\u044e\u0447 \u{1F600}'), utf8Bytes('\u2028'), 'a\tb', 'v'.repeat(4_000)) },
);

/** A credential-like text, sometimes with a character no header can carry. */
const secretish = fc
  .tuple(
    fc.constantFrom('sk-', 'gw_', 'sk-ant-', ''),
    fc.string({ maxLength: 12 }),
    fc.oneof({ weight: 3, arbitrary: fc.constant('') }, { weight: 2, arbitrary: odd }),
    fc.string({ maxLength: 4 }),
  )
  .map((parts) => parts.join(''));

/** An id for a path or a body: plausible, over the key limits, any text, or a tricky segment. */
const idText = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[a-z0-9_-]{1,24}$/) },
  { weight: 1, arbitrary: fc.constantFrom(...LONG) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }) },
);

/** A path segment: an id, percent-encoded, or a raw tricky segment. */
const pathSegment = fc.oneof(
  { weight: 6, arbitrary: idText.map((t) => encodeURIComponent(t)) },
  { weight: 1, arbitrary: fc.constantFrom('..', '.', '%2e%2e', 'a%2Fb', '%00', '%ZZ', '%', 'null', '0', '-1', '%E2%80%A8', '%F0%9F%98%80', '@x') },
);

const queryValue = fc.oneof(
  fc.integer({ min: -5, max: 1_000_000 }).map(String),
  fc.string({ maxLength: 12 }),
  idText,
  fc.constantFrom('', 'true', 'NaN', '1e309', '2026-13-45'),
);
const queryName = fc.constantFrom(
  'limit',
  'page_size',
  'current_page',
  'after',
  'before',
  'order',
  'workspace_id',
  'api_key_id',
  'time_of_generation_min',
  'status',
  'x',
  'filter',
);
const queryString = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .array(fc.tuple(queryName, queryValue), { maxLength: 4 })
      .map((pairs) => (pairs.length ? `?${pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}` : '')),
  },
  { weight: 1, arbitrary: fc.constantFrom('?%%%', '?a=%ZZ', '?&&=&', `?limit=${'9'.repeat(400)}`) },
);

/** A JSON value of any shape, or one of the values that broke things before. */
const oddValue = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 2, arbitrary: secretish },
  { weight: 1, arbitrary: fc.constantFrom(...LONG, 'f'.repeat(70_000), -1, 0, 1e308, null, true, [], {}, 'gw_0123456789abcdefghijklmnopqrstuv') },
);

/** JSON for a header: every character past ASCII escaped, as a client can only send bytes (the escapes carry CR, LF, NUL ...). */
export const headerJson = (value: unknown): string =>
  JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** Hosts a target may name: the mock, or hosts refused before any connection (`inJson`: also one a header cannot carry). */
function hosts(mock: string, inJson: boolean): fc.Arbitrary<string> {
  const refused = ['ftp://x/v1', 'not a url', 'http://169.254.169.254/latest', 'http://[::1', 'http://0.0.0.0:1/v1'];
  // An empty header is no header (the provider's own address): only a config can say ''.
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(`${mock}/v1`, mock) },
    { weight: 1, arbitrary: fc.constantFrom(...refused, ...(inJson ? ['', `${mock}/v1\n`, `${mock}/v1\u2028`] : [])) },
  );
}

/** Odd values for the fields of a config node, one of which a node may get. */
function nodeMutation(mock: string): fc.Arbitrary<[string, unknown]> {
  const field = <T>(name: string, arb: fc.Arbitrary<T>) => arb.map((v): [string, unknown] => [name, v]);
  // Values that become provider headers come up most: they are what a Node HTTP client refuses.
  return fc.oneof(
    field('provider', fc.constantFrom('nope', '', '@missing', `@${LONG[1]}`, 7)),
    { weight: 4, arbitrary: field('api_key', secretish) },
    { weight: 2, arbitrary: field('openai_organization', secretish) },
    field('custom_host', hosts(mock, true)),
    field('override_params', fc.dictionary(fc.constantFrom('model', 'stream', 'max_tokens', 'x'), oddValue, { maxKeys: 2 })),
    field('forward_headers', fc.array(fc.constantFrom('x-team', 'bad name', 'x-gw-api-key', 'authorization', 'content-length'), { maxLength: 2 })),
    field('aws_session_token', secretish),
    field('request_timeout', fc.integer({ min: -5, max: 2_000_000 })),
    field(
      'retry',
      fc.record(
        { attempts: fc.integer({ min: -1, max: 3 }), on_status_codes: fc.array(fc.integer({ min: 0, max: 700 }), { maxLength: 2 }) },
        { requiredKeys: [] },
      ),
    ),
    field('virtual_key', fc.constantFrom('vk-missing', LONG[1] as string)),
    field('weight', fc.double({ min: -1, max: 10, noNaN: true })),
    field('cache', fc.record({ mode: fc.constantFrom('simple', 'semantic', 'x'), max_age: fc.integer({ min: -1, max: 10 }) }, { requiredKeys: [] })),
    field('strict_openai_compliance', oddValue),
    field('unknown_option', oddValue),
    field('Not An Option', oddValue),
  );
}

/** One config node: a valid target on the mock with up to two fields made odd. Every node names a host, so none inherits a provider's public address. */
function configNode(mock: string): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .array(nodeMutation(mock), { maxLength: 2 })
    .map((changes) => ({ provider: 'openai', api_key: 'sk-fuzz-key-0001', custom_host: `${mock}/v1`, ...Object.fromEntries(changes) }))
    .map((node) => (typeof node.custom_host === 'string' ? node : { ...node, custom_host: `${mock}/v1` }));
}

/** An x-gw-config: an inline config (one level or a strategy over targets), a saved config's id, or text that is neither. */
function configHeader(mock: string): fc.Arbitrary<string> {
  const node = configNode(mock);
  const strategy = fc.record(
    {
      mode: fc.constantFrom('single', 'fallback', 'loadbalance', 'conditional', 'x'),
      on_status_codes: fc.array(fc.integer({ min: 100, max: 599 }), { maxLength: 2 }),
      conditions: fc.array(
        fc.record({
          query: fc.dictionary(fc.constantFrom('params.model', 'metadata.x', '$or', 'url.pathname'), oddValue, { maxKeys: 2 }),
          then: fc.constantFrom('a', 'b'),
        }),
        { maxLength: 2 },
      ),
    },
    { requiredKeys: ['mode'] },
  );
  const tree = fc
    .tuple(node, strategy, fc.array(node, { minLength: 1, maxLength: 3 }))
    .map(([root, s, targets]) => ({ ...root, strategy: s, targets: targets.map((t, i) => ({ ...t, name: i % 2 ? 'b' : 'a' })) }));
  return fc.oneof(
    { weight: 5, arbitrary: node.map(headerJson) },
    { weight: 2, arbitrary: tree.map(headerJson) },
    { weight: 1, arbitrary: fc.constantFrom('{', '{"provider":', '[]', 'null', 'pc-missing', LONG[1] as string, `{"a":${'['.repeat(2_000)}`) },
  );
}

/** Gateway headers: who calls, where the request goes, Gantry's options, content types. */
function gatewayHeaders(ctx: FuzzContext): fc.Arbitrary<Record<string, string>> {
  const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { freq: 2, nil: undefined });
  return fc
    .record({
      auth: fc.oneof({ weight: 12, arbitrary: fc.constant('ws') }, { weight: 1, arbitrary: fc.constantFrom('bearer', 'admin', 'none', 'garbage') }),
      route: fc.oneof(
        { weight: 6, arbitrary: fc.constant('provider') },
        { weight: 4, arbitrary: fc.constant('config') },
        { weight: 1, arbitrary: fc.constantFrom('none', 'virtual-key') },
      ),
      config: configHeader(ctx.mock),
      provider: fc.oneof({ weight: 8, arbitrary: fc.constant('openai') }, { weight: 1, arbitrary: fc.constantFrom('nope', '@missing', `@${LONG[0]}`) }),
      host: hosts(ctx.mock, false),
      virtualKey: fc.constantFrom('vk-missing', LONG[1] as string, utf8Bytes('\u043a')),
      contentType: fc.oneof(
        { weight: 8, arbitrary: fc.constant('application/json') },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            'text/plain',
            'multipart/form-data; boundary=X',
            'application/x-www-form-urlencoded',
            'application/json; charset=latin1',
            '',
          ),
        },
      ),
      extra: fc.dictionary(
        fc.constantFrom(
          'x-gw-forward-headers',
          'x-gw-request-timeout',
          'x-gw-metadata',
          'x-gw-trace-id',
          'x-gw-cache-force-refresh',
          'x-gw-cache-namespace',
          'x-gw-openai-organization',
          'x-gw-openai-project',
          'x-gw-azure-resource-name',
          'x-gw-aws-region',
          'x-gw-span-name',
          'x-gw-prompt',
          'openai-organization',
          'anthropic-version',
          'anthropic-beta',
          'openai-beta',
          'x-api-key',
          'accept-encoding',
          'x-team',
          'x-gw-unknown',
        ),
        fc.oneof(headerText, fc.constantFrom('1', '0', '-1', 'true', '["x-team", 1]', 'x-team, bad:name', '{"a":"\\n"}', 'gzip, br')),
        { maxKeys: 2 },
      ),
      withProvider: fc.boolean(),
      providerKey: optional(secretish.filter((s) => !/[\u0000-\u001f\u007f-\uffff]/.test(s))),
    })
    .map((g) => {
      const h: Record<string, string> = { ...g.extra };
      if (g.auth === 'ws') h['x-gw-api-key'] = ctx.workspaceKey;
      else if (g.auth === 'bearer') h.authorization = `Bearer ${ctx.workspaceKey}`;
      else if (g.auth === 'admin') h['x-gw-api-key'] = ctx.adminKey;
      else if (g.auth === 'garbage') h['x-gw-api-key'] = 'gw_not-a-key';
      if (g.providerKey !== undefined && g.auth !== 'bearer') h.authorization = `Bearer ${g.providerKey}`;
      if (g.route === 'config') h['x-gw-config'] = g.config;
      else if (g.route === 'virtual-key') h['x-gw-virtual-key'] = g.virtualKey;
      // A provider named in headers always comes with a host: never the provider's public address.
      if (g.route === 'provider' || (g.route === 'config' && g.withProvider)) {
        h['x-gw-provider'] = g.provider;
        h['x-gw-custom-host'] = g.host;
      }
      if (g.contentType) h['content-type'] = g.contentType;
      return h;
    });
}

const garbageBody = fc.constantFrom(
  '',
  '{',
  'null',
  '[]',
  '"x"',
  '{"a":1}{',
  '\u0000',
  '--X\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc\r\n--X--\r\n',
  'a=1&b=2',
  `{"a":${'['.repeat(3_000)}`,
);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Fields of gateway bodies, for odd values and for additions. */
const GATEWAY_FIELDS = [
  'model',
  'messages',
  'stream',
  'input',
  'prompt',
  'n',
  'temperature',
  'max_tokens',
  'tools',
  'input_file_id',
  'endpoint',
  'variables',
  'metadata',
  'stream_options',
];

/**
 * A body for a route: its example (a request the route's validator accepts), streamed or not,
 * with up to two fields made odd, any JSON, or text that is not JSON.
 */
function exampleBody(example: unknown, fields: readonly string[]): fc.Arbitrary<string | undefined> {
  const base = isRecord(example) ? example : {};
  const keys = [...new Set([...Object.keys(base), ...fields])];
  const change = fc.tuple(fc.constantFrom(...keys), oddValue);
  return fc.oneof(
    { weight: 3, arbitrary: fc.boolean().map((stream) => JSON.stringify(stream && 'messages' in base ? { ...base, stream } : base)) },
    { weight: 6, arbitrary: fc.array(change, { minLength: 1, maxLength: 2 }).map((changes) => JSON.stringify({ ...base, ...Object.fromEntries(changes) })) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: garbageBody },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

const ADMIN_FIELDS = [
  'name',
  'slug',
  'workspace_id',
  'id',
  'key',
  'config',
  'scopes',
  'provider',
  'expires_at',
  'url',
  'email',
  'role',
  'data',
  'metadata',
  'configurations',
  'input_file_id',
];

function adminHeaders(ctx: FuzzContext): fc.Arbitrary<Record<string, string>> {
  return fc
    .tuple(
      fc.oneof({ weight: 10, arbitrary: fc.constant('admin') }, { weight: 1, arbitrary: fc.constantFrom('ws', 'bearer', 'none', 'garbage') }),
      fc.oneof({ weight: 8, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom('text/plain', '') }),
      fc.dictionary(fc.constantFrom('x-gw-workspace-id', 'x-gw-trace-id', 'x-team', 'accept'), headerText, { maxKeys: 2 }),
    )
    .map(([auth, contentType, extra]) => {
      const h: Record<string, string> = { ...extra };
      if (auth === 'admin') h['x-gw-api-key'] = ctx.adminKey;
      else if (auth === 'ws') h['x-gw-api-key'] = ctx.workspaceKey;
      else if (auth === 'bearer') h.authorization = `Bearer ${ctx.adminKey}`;
      else if (auth === 'garbage') h['x-gw-api-key'] = 'gw_not-a-key';
      if (contentType) h['content-type'] = contentType;
      return h;
    });
}

/** The route's method most of the time, sometimes any other. */
const methodFor = (method: string) => fc.oneof({ weight: 9, arbitrary: fc.constant(method) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) });

/** Fills `{name}` (OpenAI style) or `:name` / `:name{regex}` (Hono style) parameters with generated segments. */
function fillParams(path: string): fc.Arbitrary<string> {
  const parts = path.split(/(\{[A-Za-z0-9_]+\}|:[A-Za-z0-9_]+(?:\{[^}]*\})?)/);
  const slots = parts.filter((_, i) => i % 2 === 1).length;
  return fc
    .array(pathSegment, { minLength: slots, maxLength: slots })
    .map((segments) => parts.map((p, i) => (i % 2 === 1 ? segments[(i - 1) / 2] : p)).join(''));
}

/** Requests for a gateway route (OpenAI path below /v1). */
export function gatewayRequests(ctx: FuzzContext, method: string, path: string, example: unknown): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      method: methodFor(method),
      path: fillParams(`/v1${path}`),
      query: queryString,
      headers: gatewayHeaders(ctx),
      body: exampleBody(example, GATEWAY_FIELDS),
    })
    .map((r) => ({ method: r.method, path: r.path + r.query, headers: r.headers, ...(r.body !== undefined ? { body: r.body } : {}) }));
}

/** Requests for an admin route (Hono path), its example body as the base. */
export function adminRequests(ctx: FuzzContext, method: string, path: string, example: unknown): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({ method: methodFor(method), path: fillParams(path), query: queryString, headers: adminHeaders(ctx), body: exampleBody(example, ADMIN_FIELDS) })
    .map((r) => ({ method: r.method, path: r.path + r.query, headers: r.headers, ...(r.body !== undefined ? { body: r.body } : {}) }));
}

export interface FuzzOutcome {
  status: number;
  /** Set when the connection failed or closed before the whole answer came: what happened. */
  dropped?: string;
  /** The start of the answer's body. */
  text: string;
}

/**
 * Sends one request on its own connection and reads the whole answer. `dropped` says why when the
 * connection ended without one (reset, closed mid-body, no answer within `timeoutMs`).
 */
export function sendRaw(base: string, r: FuzzRequest, timeoutMs: number): Promise<FuzzOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    let status = 0;
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (dropped?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ status, text: Buffer.concat(chunks).toString('utf8'), ...(dropped ? { dropped } : {}) });
    };
    const timer = setTimeout(() => {
      settle(`no complete answer within ${timeoutMs} ms`);
      req.destroy();
    }, timeoutMs);
    const headers = r.body !== undefined ? { ...r.headers, 'content-length': String(Buffer.byteLength(r.body)) } : r.headers;
    const req = http.request(base + r.path, { method: r.method, headers, agent: false }, (res) => {
      status = res.statusCode ?? 0;
      res.on('data', (c: Buffer) => {
        if (size < 2_048) chunks.push(c);
        size += c.length;
      });
      res.once('end', () => settle());
      res.once('aborted', () => settle('the connection closed in the middle of the answer'));
      res.once('error', (err) => settle(`the answer broke off (${err.message})`));
    });
    // An early answer (401, 413) may close the connection while the body is still being written:
    // that is not a dropped connection when the whole answer came.
    req.once('error', (err) => setImmediate(() => settle(`no answer (${(err as NodeJS.ErrnoException).code ?? err.message})`)));
    req.end(r.body);
  });
}

/** Runs `work` over `items`, `concurrency` at a time. */
export async function pool<T, R>(items: readonly T[], concurrency: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await work(items[i] as T);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out;
}
