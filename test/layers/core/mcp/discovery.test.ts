import http from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListResourcesRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamClient } from '../../../../layers/core/src/gateway/upstream.ts';
import { discover, mergeCapabilities, syncErrorText } from '../../../../layers/core/src/mcp/discovery.ts';
import { guardedMcpFetch } from '../../../../layers/core/src/mcp/fetch.ts';
import { TrustedHosts } from '../../../../layers/core/src/security/ssrf.ts';
import { startMcpEverything } from '../../../support/mcp-everything.ts';
import { startMcpUpstream, type McpUpstream } from '../../../support/mcp-upstream.ts';

const trusted = TrustedHosts.parse('127.0.0.1');
const fetch = guardedMcpFetch(new UpstreamClient(trusted), trusted);

describe('MCP discovery against a real SDK server', () => {
  const servers: McpUpstream[] = [];
  let stateful: McpUpstream;
  let stateless: McpUpstream;
  let guarded: McpUpstream;
  beforeAll(async () => {
    stateful = await startMcpUpstream({ stateful: true, name: 'files', version: '9.9.9' });
    stateless = await startMcpUpstream({ stateful: false, json: true });
    guarded = await startMcpUpstream({ requiredHeader: { name: 'x-api-key', value: 'k-1' } });
    servers.push(stateful, stateless, guarded);
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  it.each([
    ['stateful, SSE answers', () => stateful.url, 'http' as const],
    ['stateless, JSON answers', () => stateless.url, 'http' as const],
    ['legacy HTTP+SSE', () => stateful.sseUrl, 'sse' as const],
  ])('%s: initialize, then every tool, prompt and resource', async (_, url, transport) => {
    const found = await discover({ url: url(), transport, headers: {} }, fetch, 5_000);
    expect(found.protocolVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(found.capabilityFlags).toHaveProperty('tools');
    expect(found.capabilities.map((c) => `${c.type}:${c.name}`).sort()).toEqual([
      'prompt:greeting',
      'prompt:review',
      'resource:file:///readme.md',
      'resource:file:///secrets.txt',
      'tool:add',
      'tool:delete_everything',
      'tool:echo',
    ]);
    expect(found.capabilities.find((c) => c.name === 'echo')).toMatchObject({ description: 'The echo tool', input_schema: { type: 'object' } });
  });

  it('reports the server name and version from initialize', async () => {
    expect(await discover({ url: stateful.url, transport: 'http', headers: {} }, fetch, 5_000)).toMatchObject({ serverName: 'files', serverVersion: '9.9.9' });
  });

  it('sends the static headers, and fails without them', async () => {
    const ok = await discover({ url: guarded.url, transport: 'http', headers: { 'x-api-key': 'k-1' } }, fetch, 5_000);
    expect(ok.capabilities.length).toBe(7);
    expect(guarded.requests.every((r) => r.headers['x-api-key'] === 'k-1')).toBe(true);
    const err = await discover({ url: guarded.url, transport: 'http', headers: {} }, fetch, 5_000).catch((e: unknown) => e);
    expect(syncErrorText(err)).toMatch(/^HTTP 403: .*missing or wrong x-api-key/);
  });

  it('the upstream bearer check: a valid token lists, an expired one is a 401 with a challenge', async () => {
    const oauth = await startMcpUpstream({ bearer: { token: 'tok-1' } });
    servers.push(oauth);
    const withToken = (t: string) => discover({ url: oauth.url, transport: 'http', headers: { authorization: `Bearer ${t}` } }, fetch, 5_000);
    expect((await withToken('tok-1')).capabilities).toHaveLength(7);
    const fresh = oauth.expireToken();
    expect(syncErrorText(await withToken('tok-1').catch((e: unknown) => e))).toMatch(/^HTTP 401: .*invalid_token/);
    const res = await fetch(oauth.url, { method: 'POST', headers: { authorization: 'Bearer tok-1', 'content-type': 'application/json' }, body: '{}' });
    expect([res.status, res.headers.get('www-authenticate')]).toEqual([401, expect.stringContaining('invalid_token')]);
    expect((await withToken(fresh)).capabilities).toHaveLength(7);
  });

  it('lists resource templates as resources named by their URI template', async () => {
    const everything = await startMcpEverything();
    try {
      const found = await discover({ url: everything.url, transport: 'http', headers: {} }, fetch, 5_000);
      expect(
        found.capabilities
          .filter((c) => c.type === 'resource')
          .map((c) => c.name)
          .sort(),
      ).toEqual(['test://static-binary', 'test://static-text', 'test://template/{id}/data', 'test://watched-resource']);
      expect(found.capabilities.find((c) => c.name === 'test://template/{id}/data')).toMatchObject({
        title: 'Resource Template',
        description: 'A resource template with parameter substitution',
      });
    } finally {
      await everything.close();
    }
  });

  it('a server with resources that does not know resources/templates/list has no templates, and still syncs', async () => {
    const server = http.createServer((req, res) => {
      void (async () => {
        // A low-level SDK server: resources/list only.
        const mcp = new Server({ name: 'no-templates', version: '1.0.0' }, { capabilities: { resources: {} } });
        mcp.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [{ uri: 'file:///a.txt', name: 'a' }] }));
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        await mcp.connect(transport);
        await transport.handleRequest(req, res);
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as { port: number };
      const found = await discover({ url: `http://127.0.0.1:${port}/mcp`, transport: 'http', headers: {} }, fetch, 5_000);
      expect(found.capabilities.map((c) => `${c.type}:${c.name}`)).toEqual(['resource:file:///a.txt']);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('refuses a private address that is not trusted (SSRF guard)', async () => {
    const strict = TrustedHosts.parse('');
    const blockedFetch = guardedMcpFetch(new UpstreamClient(strict), strict);
    const before = stateless.requests.length;
    await expect(discover({ url: stateless.url, transport: 'http', headers: {} }, blockedFetch, 5_000)).rejects.toThrow(/private or reserved/);
    expect(stateless.requests).toHaveLength(before);
  });

  it('merges: an admin choice survives, new capabilities follow the default, vanished ones are kept unavailable', () => {
    const at = '2026-01-01T00:00:00.000Z';
    const stored = [
      { type: 'tool' as const, name: 'echo', enabled: false, schema_hash: 'h1', created_at: at, last_updated_at: at },
      { type: 'tool' as const, name: 'gone', enabled: false, created_at: at, last_updated_at: at },
    ];
    const d = (name: string) => ({ type: 'tool' as const, name, title: null, description: null, input_schema: null, schema_hash: 'h1' });
    const merged = mergeCapabilities(stored, [d('echo'), d('fresh')], false, '2026-02-01T00:00:00.000Z');
    expect(merged).toEqual([
      expect.objectContaining({ name: 'echo', enabled: false, available: true, last_updated_at: at }),
      expect.objectContaining({ name: 'fresh', enabled: false, available: true, created_at: '2026-02-01T00:00:00.000Z' }),
      expect.objectContaining({ name: 'gone', enabled: false, available: false }),
    ]);
    expect(mergeCapabilities([], [d('fresh')], true, at)[0]?.enabled).toBe(true);
  });
});
