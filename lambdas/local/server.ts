/**
 * The local server. `direct` serves the core as it is; `lambda` sends every request through the
 * real Lambda handlers (API Gateway event in, the streaming prelude framing out), routed by path as
 * API Gateway routes them.
 */
import { readFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { createSecureContext } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { closeAfterEarlyAnswer, createNodeListener, refusedMethod, type EndBarrier } from './node-adapter.ts';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { ConfigError, type AppConfig } from '../../layers/core/src/config.ts';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { createApp } from '../../layers/core/src/app.ts';
import { isAdminPath } from '../../layers/core/src/http/surfaces.ts';
import { gatewayModule } from '../../layers/core/src/gateway/routes.ts';
import { adminModule } from '../../layers/core/src/admin/routes.ts';
import { mcpModule } from '../../layers/core/src/mcp/gateway/routes.ts';
import { attachRealtime, isRealtimeUpgrade } from './realtime.ts';
import { isConsolePath, serveConsole } from './console-static.ts';
import { logDurability } from '../../layers/core/src/observability/hooks.ts';
import { installAwsLambdaGlobals, PreludeDecoder, ResponseStream, type StreamingHandler } from './awslambda.ts';

export type LocalMode = 'direct' | 'lambda';

export interface LocalServerOptions {
  deps: CoreDeps;
  mode?: LocalMode;
  port?: number;
  host?: string;
  /** The built console served at /console/ (default: dist/console under the working directory). */
  consoleDir?: string;
}

export interface LocalServer {
  url: string;
  port: number;
  mode: LocalMode;
  /**
   * Stops accepting connections and resolves once every connection has ended. Requests in flight
   * get up to `graceMs` to finish (default 0: cut at once); idle keep-alive connections close now,
   * busy ones as soon as their answer has been sent.
   */
  close(graceMs?: number): Promise<void>;
}

export async function startLocalServer(opts: LocalServerOptions): Promise<LocalServer> {
  const mode = opts.mode ?? 'direct';
  // Only realtime upgrades reach the `upgrade` listener; any other is answered as a plain request.
  const serverOptions = { shouldUpgradeCallback: isRealtimeUpgrade };
  const core =
    mode === 'direct'
      ? createNodeListener(
          createApp(opts.deps, [gatewayModule, mcpModule, adminModule]),
          (err) => opts.deps.logger.error('local server error', { error: err }),
          logBarrier(opts.deps),
        )
      : await lambdaListener(opts.deps);
  const listener = withConsole(core, path.resolve(opts.consoleDir ?? 'dist/console'));
  // With GW_TLS_CERT and GW_TLS_KEY: https:// and wss://, which clients that insist on TLS need (the openai SDK's realtime client).
  const tls = tlsFiles(opts.deps.config.tls);
  const server = tls ? https.createServer({ ...serverOptions, ...tls }, listener) : http.createServer(serverOptions, listener);
  // Both modes relay locally: on AWS the WebSocket API is its own front door (docs/realtime.md).
  const realtime = attachRealtime(server, opts.deps);
  server.keepAliveTimeout = 65_000;
  const draining = trackDrain(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host ?? '127.0.0.1';
  const url = `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  // Links the service sends (invites) point here unless GW_PUBLIC_URL names another address.
  opts.deps.config.publicUrl ??= url;
  // A custom host never reaches this server (on any address of the machine), whatever GW_TRUSTED_CUSTOM_HOSTS
  // trusts; DynamoDB Local's port is reserved with the deps (createDeps), from DYNAMODB_ENDPOINT.
  opts.deps.trustedHosts.reserveOwnPort(port);
  return {
    url,
    port,
    mode,
    close: (graceMs = 0) =>
      new Promise<void>((resolve) => {
        const cut = graceMs > 0 ? setTimeout(() => server.closeAllConnections(), graceMs) : undefined;
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        draining.start();
        realtime.close();
        if (!cut) server.closeAllConnections();
      }),
  };
}

type Listener = (req: IncomingMessage, res: ServerResponse) => unknown;

/** The certificate and key, read and checked at start so that a wrong file stops `npm start` naming its variable. */
function tlsFiles(files: AppConfig['tls']): { cert: Buffer; key: Buffer } | undefined {
  if (!files) return undefined;
  const read = (name: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new ConfigError(`Invalid configuration: ${name} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}: ${file})`);
    }
  };
  const pair = { cert: read('GW_TLS_CERT', files.certFile), key: read('GW_TLS_KEY', files.keyFile) };
  try {
    createSecureContext(pair);
  } catch (err) {
    throw new ConfigError(`Invalid configuration: GW_TLS_CERT and GW_TLS_KEY must be a PEM certificate and its private key (${(err as Error).message})`);
  }
  return pair;
}

/**
 * With a spool, a gateway answer ends only once its request log is on disk, so a crash right after
 * it cannot lose the log (lambda mode gets the same from the function's flush before it returns).
 */
function logBarrier(deps: CoreDeps): EndBarrier | undefined {
  const kept = logDurability(deps.gatewayHooks);
  if (!kept) return undefined;
  return (response) => {
    const logId = response.headers.get('x-gw-log-id');
    return logId ? () => kept.durable(logId) : undefined;
  };
}

/**
 * Reason phrases for the guardrail statuses, which Node's table lacks (it would send `446 unknown`):
 * the status line a browser's `statusText` and the console show.
 */
http.STATUS_CODES[246] ??= 'Flagged by Guardrails';
http.STATUS_CODES[446] ??= 'Denied by Guardrails';

/** The console's static files in front of the core (in AWS, CloudFront serves them from S3). */
function withConsole(core: Listener, consoleDir: string): Listener {
  return (req, res) => {
    const pathname = (req.url ?? '/').split('?', 1)[0] ?? '/';
    // Someone who opens the server's address in a browser is looking for the console.
    if (pathname === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(302, { location: '/console/', 'content-length': '0' });
      return void res.end();
    }
    if (!isConsolePath(pathname)) return core(req, res);
    return serveConsole(consoleDir, req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end();
    });
  };
}

/**
 * While the server drains, answers carry `connection: close` and a keep-alive connection is closed
 * once its answer has been sent, so the server closes when the last request in flight ends rather
 * than when clients drop their idle connections.
 */
function trackDrain(server: http.Server | https.Server): { start(): void } {
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  const noKeepAlive = (res: ServerResponse) => {
    if (!res.headersSent) res.shouldKeepAlive = false;
  };
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    if (draining) noKeepAlive(res);
    inFlight.add(res);
    res.once('close', () => {
      inFlight.delete(res);
      if (draining) setImmediate(() => server.closeIdleConnections());
    });
  });
  return {
    start() {
      draining = true;
      inFlight.forEach(noKeepAlive);
      server.closeIdleConnections();
    },
  };
}

type BufferedHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

async function lambdaListener(deps: CoreDeps) {
  installAwsLambdaGlobals();
  const [{ createGatewayHandler }, { createAdminHandler }] = await Promise.all([import('../gateway/handler.ts'), import('../admin/handler.ts')]);
  const getDeps = () => Promise.resolve(deps);
  const gateway = createGatewayHandler(getDeps) as unknown as StreamingHandler<APIGatewayProxyEvent, Context>;
  const admin = createAdminHandler(getDeps) as unknown as BufferedHandler;

  return async (req: IncomingMessage, res: ServerResponse) => {
    if (refusedMethod(req, res)) return;
    // API Gateway refuses a payload over 10 MB before any function runs.
    if (Number(req.headers['content-length'] ?? 0) > API_GATEWAY_MAX_PAYLOAD) return tooLong(req, res);
    try {
      const event = await toEvent(req);
      const context = lambdaContext(isAdminPath(event.path) ? 'gantry-admin' : 'gantry-gateway');
      if (isAdminPath(event.path)) await invokeBuffered(admin, event, context, res);
      else await invokeStreaming(gateway, event, context, res);
    } catch (err) {
      if (err instanceof PayloadTooLong) return tooLong(req, res);
      // What API Gateway answers when the function fails.
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end('{"message": "Internal server error"}');
    }
  };
}

async function invokeBuffered(handler: BufferedHandler, event: APIGatewayProxyEvent, context: Context, res: ServerResponse) {
  const result = await handler(event, context);
  const headers: Record<string, string | string[]> = { ...(result.headers as Record<string, string>) };
  for (const [k, vs] of Object.entries(result.multiValueHeaders ?? {})) headers[k] = vs.map(String);
  res.writeHead(result.statusCode, headers);
  res.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
}

async function invokeStreaming(handler: StreamingHandler<APIGatewayProxyEvent, Context>, event: APIGatewayProxyEvent, context: Context, res: ServerResponse) {
  const decoder = new PreludeDecoder(
    (p) => {
      const headers: Record<string, string | string[]> = { ...p.headers };
      if (p.cookies.length) headers['set-cookie'] = p.cookies;
      res.writeHead(p.statusCode, headers);
    },
    (chunk) => res.write(chunk),
  );
  const stream = new ResponseStream((chunk) => decoder.push(chunk));
  await handler(event, stream, context);
  if (!stream.writableFinished) await new Promise((r) => stream.once('finish', r));
  if (!decoder.done) throw new Error('The handler ended without an HTTP prelude');
  res.end();
}

/** API Gateway's REST payload limit. */
const API_GATEWAY_MAX_PAYLOAD = 10 << 20;

class PayloadTooLong extends Error {}

function tooLong(req: IncomingMessage, res: ServerResponse): void {
  closeAfterEarlyAnswer(req, res);
  res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
  res.end('{"message": "Request Too Long"}');
}

/** The whole body, or PayloadTooLong past API Gateway's limit (the socket left open, so the 413 reaches the client). */
function readPayload(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      chunks.push(c);
      if (size <= API_GATEWAY_MAX_PAYLOAD) return;
      req.off('data', onData);
      req.pause();
      reject(new PayloadTooLong());
    };
    req.on('data', onData);
    req.once('error', reject);
    req.once('close', () => {
      if (!req.complete) reject(new Error('the client closed the request before its body was complete'));
    });
    req.once('end', () => resolve(Buffer.concat(chunks)));
  });
}

async function toEvent(req: IncomingMessage): Promise<APIGatewayProxyEvent> {
  const body = await readPayload(req);
  const url = new URL(req.url ?? '/', 'http://local');
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (const [k, vs] of Object.entries(req.headersDistinct)) {
    if (!vs) continue;
    multiValueHeaders[k] = vs;
    headers[k] = vs[vs.length - 1] ?? '';
  }
  // API Gateway appends the caller's address to X-Forwarded-For.
  const peer = req.socket.remoteAddress ?? '127.0.0.1';
  headers['x-forwarded-for'] = headers['x-forwarded-for'] ? `${headers['x-forwarded-for']}, ${peer}` : peer;
  multiValueHeaders['x-forwarded-for'] = [headers['x-forwarded-for']];
  const query: Record<string, string> = {};
  const multiQuery: Record<string, string[]> = {};
  for (const [k, v] of url.searchParams) {
    query[k] = v;
    (multiQuery[k] ??= []).push(v);
  }
  const hasQuery = Object.keys(query).length > 0;
  return {
    httpMethod: req.method ?? 'GET',
    path: url.pathname,
    resource: '/v1/{proxy+}',
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    pathParameters: { proxy: url.pathname.replace(/^\/v1\//, '') },
    stageVariables: null,
    // The REST API declares binaryMediaTypes '*/*', so API Gateway base64-encodes every body.
    body: body.length ? body.toString('base64') : null,
    isBase64Encoded: body.length > 0,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: undefined,
      protocol: `HTTP/${req.httpVersion}`,
      httpMethod: req.method ?? 'GET',
      identity: { sourceIp: req.socket.remoteAddress ?? '127.0.0.1' } as APIGatewayProxyEvent['requestContext']['identity'],
      path: url.pathname,
      stage: 'local',
      requestId: randomUUID(),
      requestTimeEpoch: Date.now(),
      resourceId: 'local',
      resourcePath: '/v1/{proxy+}',
    },
  };
}

function lambdaContext(functionName: string): Context {
  const deadline = Date.now() + 15 * 60_000;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
