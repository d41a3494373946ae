/**
 * Every outbound path of the core refuses this service's own ports, with `127.0.0.1` trusted bare:
 * the upstream client (providers, passthrough), guardrail check fetches and their redirects, MCP
 * fetches, secret manager calls and the semantic cache's embedder. A real listener on loopback
 * stands for DynamoDB Local and counts what reaches it; a trusted model server on another
 * loopback port redirects to it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UpstreamClient } from '../../../../layers/core/src/gateway/upstream.ts';
import { createEmbedder } from '../../../../layers/core/src/gateway/cache/embedder.ts';
import { CheckFetchError, guardedFetch } from '../../../../layers/core/src/guardrails/check-deps.ts';
import { guardedMcpFetch } from '../../../../layers/core/src/mcp/fetch.ts';
import { managerHttp } from '../../../../layers/core/src/secrets/http.ts';
import { SecretManagerError } from '../../../../layers/core/src/ports/secret-managers.ts';
import { BlockedAddressError, TrustedHosts } from '../../../../layers/core/src/security/ssrf.ts';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe("this service's own ports on every outbound path", () => {
  let own: { server: http.Server; port: number };
  let model: { server: http.Server; port: number };
  let reached = 0;
  let trusted: TrustedHosts;
  let upstream: UpstreamClient;
  /** Where the model server redirects next. */
  let location = '';

  beforeAll(async () => {
    own = await listen((_req, res) => {
      reached++;
      res.end('{"TableNames":[]}');
    });
    model = await listen((req, res) => {
      if (req.url?.startsWith('/redirect')) {
        res.writeHead(307, { location });
        res.end();
        return;
      }
      res.end('{"ok":true}');
    });
    trusted = TrustedHosts.parse('127.0.0.1');
    // As createDeps does for DYNAMODB_ENDPOINT.
    trusted.reserveOwnEndpoint(`http://127.0.0.1:${own.port}`);
    upstream = new UpstreamClient(trusted);
  });
  afterAll(async () => {
    upstream.close();
    await Promise.all([own, model].map(({ server }) => new Promise<void>((resolve) => server.close(() => resolve()))));
  });
  beforeEach(() => {
    reached = 0;
  });

  it('the upstream client refuses a URL that skipped parsing, at connect time, whatever the spelling', async () => {
    for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]']) {
      const url = new URL(`http://${host}:${own.port}/`);
      const err: unknown = await upstream.send({ url, method: 'POST', headers: {}, body: '{}' }).catch((e: unknown) => e);
      expect(err, host).toBeInstanceOf(BlockedAddressError);
      expect((err as BlockedAddressError).status).toBe(400);
    }
    expect(reached).toBe(0);
    // The trusted model server on another port is reached.
    const ok = await upstream.send({ url: new URL(`http://127.0.0.1:${model.port}/`), method: 'GET', headers: {} });
    expect(ok.status).toBe(200);
    ok.body.resume();
  });

  it("a guardrail check fetch refuses an own port, also as the target of a trusted server's redirect", async () => {
    const fetch = guardedFetch(upstream, trusted);
    const direct: unknown = await fetch(`http://127.0.0.1:${own.port}/`, { method: 'POST', body: '{}' }).catch((e: unknown) => e);
    expect(direct).toBeInstanceOf(CheckFetchError);
    expect((direct as CheckFetchError).kind).toBe('blocked');
    for (const target of [`http://127.0.0.1:${own.port}/`, `http://[::1]:${own.port}/`, `http://0.0.0.0:${own.port}/`, `http://localhost:${own.port}/`]) {
      location = target;
      const err: unknown = await fetch(`http://127.0.0.1:${model.port}/redirect`, { method: 'POST', body: '{}' }).catch((e: unknown) => e);
      expect(err, target).toBeInstanceOf(CheckFetchError);
      expect((err as CheckFetchError).kind, target).toBe('blocked');
      expect((err as CheckFetchError).message, target).toContain("this service's own ports");
    }
    expect(reached).toBe(0);
    location = `http://127.0.0.1:${model.port}/landed`;
    expect((await fetch(`http://127.0.0.1:${model.port}/redirect`, { method: 'GET' })).status).toBe(200);
  });

  it('an MCP fetch refuses an own port', async () => {
    const err: unknown = await guardedMcpFetch(upstream, trusted)(`http://127.0.0.1:${own.port}/mcp`, { method: 'POST', body: '{}' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message).toContain("this service's own ports");
    expect(reached).toBe(0);
  });

  it('a secret manager call refuses an own port', async () => {
    const err: unknown = await managerHttp(
      upstream,
      trusted,
      5_000,
    )(`http://127.0.0.1:${own.port}/v1/secret/data/x`, { method: 'GET' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SecretManagerError);
    expect((err as SecretManagerError).message).toContain('refused by the SSRF guard');
    expect(reached).toBe(0);
  });

  it("the semantic cache's embedder refuses an own port", () => {
    expect(() =>
      createEmbedder({ upstream, trustedHosts: trusted }, { provider: 'openai', model: 'e', custom_host: `http://127.0.0.1:${own.port}/v1` }, 'sk-x'),
    ).toThrow("this service's own ports");
    expect(reached).toBe(0);
  });
});
