/**
 * The authenticate and resolve phases: who calls (from the headers alone), then which config the
 * request runs (x-gw-provider, inline or saved x-gw-config, the key's own) and its routing headers,
 * each bad one refused with 400 (or 403) naming the header. The key's authenticator and the saved
 * configs are in-memory fakes of the narrow interfaces these phases read (unit-deps.ts).
 */
import { describe, expect, it } from 'vitest';
import { openRecord } from '../../../../layers/core/src/gateway/flight.ts';
import { authenticate, resolve } from '../../../../layers/core/src/gateway/resolve.ts';
import type { GatewayPrincipal } from '../../../../layers/core/src/gateway/access.ts';
import type { Principal } from '../../../../layers/core/src/kernel/principal.ts';
import type { ConfigNode } from '../../../../layers/core/src/kernel/routing.ts';
import { workspacePrincipal } from '../../../support/identity.ts';
import { CHAT, chatBody, gatewayRequest, UNIT_KEY, unitDeps, type UnitDepsOptions, refusal } from '../../../support/unit-deps.ts';

const principal = workspacePrincipal() as GatewayPrincipal;

function flightWith(headers: Record<string, string>, opts: UnitDepsOptions = {}) {
  return openRecord(CHAT, gatewayRequest('/chat/completions', { body: chatBody(), headers }), unitDeps(opts), undefined);
}

const resolveWith = (headers: Record<string, string>, opts: UnitDepsOptions = {}) => {
  const f = flightWith(headers, opts);
  return resolve(f, (opts.principal as GatewayPrincipal | undefined) ?? principal).then((resolved) => ({ f, resolved }));
};

describe('authenticate', () => {
  it('takes the caller from the gateway key (x-gw-api-key or a gw_ bearer) and notes it in the record', async () => {
    const ways: Record<string, string>[] = [{ 'x-gw-api-key': UNIT_KEY }, { 'x-gw-api-key': '', authorization: `Bearer ${UNIT_KEY}` }];
    for (const headers of ways) {
      const f = flightWith(headers);
      const caller = await authenticate(f);
      expect(caller).toMatchObject({ keyId: 'k1', workspaceId: 'w1' });
      expect(f.record.principal).toBe(caller);
      // The gateway key is never taken for the provider's: a gw_ bearer leaves Authorization.
      expect(f.headers.get('authorization')).toBeNull();
    }
  });

  it('refuses a wrong key with 401', async () => {
    expect(await refusal(authenticate(flightWith({ 'x-gw-api-key': 'gw_wrong' })))).toMatchObject({ status: 401, openaiCode: 'invalid_api_key' });
  });

  it('refuses an organisation key, and a key without completions.write, with 403', async () => {
    const org: Principal = workspacePrincipal({ workspaceId: null, role: 'admin', keyType: 'organisation-service' });
    expect(await refusal(authenticate(flightWith({}, { principal: org })))).toMatchObject({
      status: 403,
      message: expect.stringContaining('workspace API key'),
    });
    const readOnly = workspacePrincipal({ scopes: new Set(['logs.read']) });
    expect(await refusal(authenticate(flightWith({}, { principal: readOnly })))).toMatchObject({
      status: 403,
      message: expect.stringContaining('completions.write'),
    });
  });
});

describe('resolve: a config from headers', () => {
  it('makes a single target of x-gw-provider and x-gw-custom-host, noted as from headers', async () => {
    const { f, resolved } = await resolveWith({ 'x-gw-provider': 'openai', 'x-gw-custom-host': 'https://llm.example.com/v1' });
    expect(resolved).toMatchObject({ config: { provider: 'openai', custom_host: 'https://llm.example.com/v1' }, fromHeaders: true });
    expect(f.record.configSource).toBe('headers');
  });

  it('reads x-gw-request-timeout, and refuses a bad one with 400 naming it', async () => {
    expect((await resolveWith({ 'x-gw-provider': 'openai', 'x-gw-request-timeout': '2500' })).resolved.headerTimeoutMs).toBe(2500);
    for (const bad of ['soon', '0', '1.5']) {
      expect(await refusal(resolveWith({ 'x-gw-request-timeout': bad }))).toMatchObject({ status: 400, param: 'x-gw-request-timeout' });
    }
  });

  it("forwards the endpoint's own headers and the ones x-gw-forward-headers lists, never a gateway header", async () => {
    const { resolved } = await resolveWith({ 'x-gw-forward-headers': 'X-Team, x-gw-api-key' });
    expect(resolved.forwardHeaders).toEqual(['x-team']);
    expect(await refusal(resolveWith({ 'x-gw-forward-headers': '["ok", 3]' }))).toMatchObject({ status: 400, param: 'x-gw-forward-headers' });
  });
});

describe('resolve: x-gw-config', () => {
  const fallback = {
    strategy: { mode: 'fallback' },
    targets: [
      { provider: 'openai', api_key: 'sk-a' },
      { provider: 'anthropic', api_key: 'sk-b' },
    ],
  };

  it('runs an inline config, with x-gw-provider as the provider its targets inherit', async () => {
    const { f, resolved } = await resolveWith({ 'x-gw-config': JSON.stringify(fallback), 'x-gw-provider': 'openai' });
    expect(resolved).toMatchObject({ config: fallback, fromHeaders: false, headerProvider: 'openai' });
    expect(f.record.configSource).toBe('inline');
  });

  it('refuses an inline config that is not JSON with 400 naming x-gw-config', async () => {
    const err = await refusal(resolveWith({ 'x-gw-config': '{"strategy": ' }));
    expect(err).toMatchObject({ status: 400, param: 'x-gw-config', code: 'AB01' });
  });

  it("refuses an invalid inline config with 400 naming x-gw-config and each problem's path", async () => {
    const err = await refusal(resolveWith({ 'x-gw-config': JSON.stringify({ strategy: { mode: 'sideways' }, targets: [{ provider: 'openai' }] }) }));
    expect(err).toMatchObject({ status: 400, param: 'x-gw-config' });
    expect(err.problems.map((p) => p.path)).toContain('strategy.mode');
  });

  it('reads a saved config by id or slug in the caller workspace, and notes it', async () => {
    const saved: ConfigNode = { provider: 'openai', api_key: 'sk-saved' };
    const { f, resolved } = await resolveWith({ 'x-gw-config': 'prod-routing' }, { savedConfigs: { 'prod-routing': saved } });
    expect(resolved.config).toBe(saved);
    expect(f.record).toMatchObject({ configSource: 'saved', configId: 'prod-routing' });
  });

  it('refuses a saved config the workspace does not have with 400 naming x-gw-config', async () => {
    const err = await refusal(resolveWith({ 'x-gw-config': 'missing' }, { savedConfigs: { other: { provider: 'openai' } } }));
    expect(err).toMatchObject({ status: 400, param: 'x-gw-config', message: 'x-gw-config: no saved config "missing" in this workspace' });
  });
});

describe("resolve: the key's pinned config", () => {
  const pinned = (allow: boolean) => workspacePrincipal({ defaults: { config_id: 'pinned', allow_config_override: allow } }) as GatewayPrincipal;
  const savedConfigs = { pinned: { provider: 'openai', api_key: 'sk-pinned' }, other: { provider: 'anthropic' } };

  it('is used when the request sends no config', async () => {
    const { f, resolved } = await resolveWith({}, { principal: pinned(true), savedConfigs });
    expect(resolved.config).toBe(savedConfigs.pinned);
    expect(f.record).toMatchObject({ configSource: 'key', configId: 'pinned' });
  });

  it('refuses every routing header with 403 naming it when the key does not allow overrides', async () => {
    for (const header of ['x-gw-config', 'x-gw-provider', 'x-gw-custom-host', 'x-gw-virtual-key']) {
      const err = await refusal(resolveWith({ [header]: 'other' }, { principal: pinned(false), savedConfigs }));
      expect(err).toMatchObject({ status: 403, param: header });
    }
    // Overrides allowed: the request's own config wins.
    expect((await resolveWith({ 'x-gw-config': 'other' }, { principal: pinned(true), savedConfigs })).resolved.config).toBe(savedConfigs.other);
  });
});
