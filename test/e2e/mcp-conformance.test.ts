/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, every server scenario)
 * run through Gantry's MCP gateway: the suite's "everything" server (test/support/mcp-everything.ts)
 * is registered as an MCP integration with the admin API, discovered, put behind a server slug, and
 * the suite's CLI tests `/v1/mcp/{slug}` as it would test any MCP server. The suite's client sends no
 * credentials, so it talks to a loopback pipe that adds the gateway key to each request and
 * changes nothing else (the Host and Origin it sends reach Gantry as sent).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMcpEverything, type McpEverything } from '../support/mcp-everything.ts';

const CLI = path.join(path.dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json')), 'dist/index.js');
const RUN_TIMEOUT_MS = 40_000;

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  description?: string;
  errorMessage?: string;
}

/** A loopback pipe to `target` that adds the key; every other header (Host, Origin) and byte goes as it came. */
async function keyedPipe(target: string, key: string): Promise<{ url: string; close(): Promise<void> }> {
  const to = new URL(target);
  const server = http.createServer((req, res) => {
    const out = http.request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, 'x-gw-api-key': key } },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        res.flushHeaders();
        up.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    res.on('close', () => out.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://localhost:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Runs the CLI (the active suite: every server scenario but those the suite marks pending) and answers each scenario's checks. */
async function runSuite(url: string): Promise<{ byScenario: Map<string, Check[]>; output: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-mcp-conformance-'));
  try {
    const output = await new Promise<string>((resolve) => {
      execFile(process.execPath, [CLI, 'server', '--url', url, '-o', dir], { timeout: RUN_TIMEOUT_MS, cwd: dir }, (_err, stdout, stderr) =>
        resolve(`${stdout}${stderr}`),
      );
    });
    const byScenario = new Map<string, Check[]>();
    for (const entry of await readdir(dir)) {
      // server-<scenario>-<ISO timestamp with dashes>
      const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
      if (!scenario) continue;
      // A scenario cut short by the timeout has a folder and no checks.
      const saved = await readFile(path.join(dir, entry, 'checks.json'), 'utf8').catch(() => undefined);
      byScenario.set(
        scenario,
        saved ? (JSON.parse(saved) as Check[]) : [{ id: scenario, status: 'FAILURE', errorMessage: `no result within ${RUN_TIMEOUT_MS} ms` }],
      );
    }
    if (byScenario.size === 0) throw new Error(`the conformance CLI saved no results:\n${output}`);
    return { byScenario, output };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Registers an MCP server with the admin API as a user would: integration, sync (discovery), server. */
async function register(gw: TestGantry, url: string, name: string): Promise<{ slug: string; id: string }> {
  const ok = async (method: string, p: string, body?: unknown) => {
    const res = await gw.admin(method, p, body);
    if (res.status !== 200) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.json)}`);
    return res.json;
  };
  const integration = await ok('POST', '/v1/mcp-integrations', { name, url, auth_type: 'none', transport: 'http', workspace_id: 'default' });
  const metadata = await ok('GET', `/v1/mcp-integrations/${integration.id as string}/metadata?refresh=true`);
  if (metadata.sync_status !== 'synced') throw new Error(`sync: ${JSON.stringify(metadata)}`);
  const server = await ok('POST', '/v1/mcp-servers', { name, mcp_integration_id: integration.id, workspace_id: 'default' });
  return { slug: server.slug as string, id: server.id as string };
}

/** A raw POST with the Host and Origin given (fetch would not let Host be chosen). */
function post(base: string, path_: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = http.request(
      new URL(path_, base),
      { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(parts).toString('utf8');
          const data = raw.startsWith('{') ? raw : (/^data: (\{.*)$/m.exec(raw)?.[1] ?? '{}');
          try {
            resolve({ status: res.statusCode ?? 0, json: JSON.parse(data) as Record<string, unknown> });
          } catch {
            reject(new Error(`${res.statusCode}: ${raw}`));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};

describe.each(['direct', 'lambda'] as const)('the MCP conformance suite through Gantry (%s mode)', (mode) => {
  let gw: TestGantry;
  let upstream: McpEverything;
  let slowGet: McpEverything;
  let pipe: { url: string; close(): Promise<void> };
  let key: string;
  let server: { slug: string; id: string };

  beforeAll(async () => {
    [gw, upstream, slowGet] = await Promise.all([
      startGantry(mode, { GW_MCP_ALLOWED_ORIGINS: 'https://app.example.com' }),
      startMcpEverything(),
      startMcpEverything({ getDelayMs: 300 }),
    ]);
    server = await register(gw, upstream.url, 'Everything');
    key = await gw.workspaceKey();
    pipe = await keyedPipe(gw.url, key);
  });
  afterAll(async () => {
    await pipe?.close();
    await Promise.all([gw?.close(), upstream?.close(), slowGet?.close()]);
  });

  it('discovers the resource template with the tools, prompts and resources, and serves it', async () => {
    const caps = await gw.admin('GET', `/v1/mcp-servers/${server.id}/capabilities?page_size=100`);
    const names = (caps.json.data as Array<{ type: string; name: string; enabled: boolean }>).filter((c) => c.enabled).map((c) => `${c.type}:${c.name}`);
    expect(names).toEqual(
      expect.arrayContaining(['resource:test://template/{id}/data', 'resource:test://static-text', 'tool:test_sampling', 'prompt:test_simple_prompt']),
    );
    const client = new Client({ name: 'gantry-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/v1/mcp/${server.slug}`), { requestInit: { headers: { 'x-gw-api-key': key } } }));
    try {
      expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual(['test://template/{id}/data']);
      expect(await client.readResource({ uri: 'test://template/42/data' })).toMatchObject({
        contents: [{ uri: 'test://template/42/data', text: expect.stringContaining('Data for ID: 42') }],
      });
    } finally {
      await client.close();
    }
  });

  it('refuses a foreign Origin, or a Host that is not its name, with 403 before the server is reached; its own, a listed and no Origin pass', async () => {
    const base = gw.url;
    const own = new URL(base).host;
    const at = upstream.arrivals.length;
    const refused: Array<Record<string, string>> = [
      { origin: 'https://evil.example.com' },
      { host: 'evil.example.com', origin: 'http://evil.example.com' },
      { host: `rebound.example.com:${new URL(base).port}`, origin: `http://rebound.example.com:${new URL(base).port}` },
      { origin: 'null' },
    ];
    for (const h of refused) {
      const res = await post(base, `/v1/mcp/${server.slug}`, { 'x-gw-api-key': key, ...h }, INITIALIZE);
      expect([res.status, (res.json.error as { code?: string } | undefined)?.code], JSON.stringify(h)).toEqual([403, 'mcp_origin_not_allowed']);
    }
    expect(upstream.arrivals.length).toBe(at);
    const accepted: Array<Record<string, string>> = [
      {},
      { origin: `http://${own}` },
      { host: `localhost:${new URL(base).port}`, origin: `http://localhost:${new URL(base).port}` },
      { origin: 'https://app.example.com' },
    ];
    for (const h of accepted) {
      const res = await post(base, `/v1/mcp/${server.slug}`, { 'x-gw-api-key': key, ...h }, INITIALIZE);
      expect([res.status, (res.json.result as { serverInfo?: { name?: string } } | undefined)?.serverInfo?.name], JSON.stringify(h)).toEqual([
        200,
        'mcp-conformance-test-server',
      ]);
    }
  });

  /** Calls test_sampling through Gantry with an SDK client; answers what reached the client, in order. */
  async function sample(slug: string, fetchFn?: typeof fetch): Promise<string[]> {
    const client = new Client({ name: 'gantry-test', version: '1.0.0' }, { capabilities: { sampling: {} } });
    const seen: string[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, async () => {
      seen.push('sampling');
      return { role: 'assistant', content: { type: 'text', text: 'sampled' }, model: 'test-model' };
    });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gw.url}/v1/mcp/${slug}`), {
        requestInit: { headers: { 'x-gw-api-key': key } },
        ...(fetchFn ? { fetch: fetchFn } : {}),
      }),
    );
    try {
      const result = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'hi' } }, undefined, { timeout: 5_000 });
      seen.push((result.content as Array<{ text?: string }>)[0]?.text ?? 'no text');
      return seen;
    } finally {
      await client.close();
    }
  }

  it("holds a new session's tool call until its GET stream is open: the server's sampling request reaches the client before the answer", async () => {
    // The client's GET stream leaves 50 ms after the call it would otherwise precede.
    const lateGet: typeof fetch = async (input, init) => {
      if ((init?.method ?? 'GET') === 'GET') await new Promise((r) => setTimeout(r, 50));
      return fetch(input, init);
    };
    expect(await sample(server.slug, lateGet)).toEqual(['sampling', 'LLM response: sampled']);
  });

  it('holds the requests after a GET until the server has opened its stream', async () => {
    const slow = await register(gw, slowGet.url, 'Slow stream');
    expect(await sample(slow.slug)).toEqual(['sampling', 'LLM response: sampled']);
  });

  it('passes every server scenario', async () => {
    const { byScenario, output } = await runSuite(`${pipe.url}/v1/mcp/${server.slug}`);
    // Every scenario the run announced has its result, the three this gateway once failed among them.
    const announced = Number(/Running active suite \((\d+) scenarios\)/.exec(output)?.[1]);
    expect([byScenario.size, announced >= 30], output.slice(-4000)).toEqual([announced, true]);
    expect([...byScenario.keys()]).toEqual(
      expect.arrayContaining(['resources-templates-read', 'dns-rebinding-protection', 'tools-call-sampling', 'tools-call-elicitation']),
    );
    const failed = [...byScenario].flatMap(([scenario, checks]) =>
      checks
        .filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')
        .map((c) => `${scenario}: ${c.id} ${c.status} ${c.errorMessage ?? c.description ?? ''}`),
    );
    expect(failed).toEqual([]);
  }, 60_000);
});
