/**
 * Secret references end to end: an administrator points a reference at a secret in HashiCorp
 * Vault, Azure Key Vault or AWS Secrets Manager (real HTTP stand-ins speaking their wire formats),
 * maps it onto an integration's key, and clients call `@slug` while the gateway fetches the key at
 * request time. A rotation is used by the first request the provider refuses with the old key (and
 * by every request once the cache TTL passed); a revoked grant fails closed with a 502 naming the
 * reference; an unreachable manager is bridged with the cached value for at most 15 minutes. The
 * secret values never reach the table, the data directory, logs, audit entries, exports or answers.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../layers/core/src/ports/clock.ts';
import { stsAssumeRole } from '../../layers/core/src/providers/native/aws.ts';
import type { AssumeRoleInput } from '../../layers/core/src/providers/transform.ts';
import type { Logger } from '../../layers/core/src/ports/logger.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockServer, type MockServer } from '../support/mock-http.ts';
import { completion } from '../support/mock-openai.ts';
import {
  startMockKeyVault,
  startMockSecretsManager,
  startMockVault,
  type MockKeyVault,
  type MockSecretsManager,
  type MockVault,
} from '../support/mock-secret-managers.ts';
import { settleLogs, waitFor } from '../support/observability.ts';
import { scanTable } from '../support/records.ts';

type Json = Record<string, unknown>;
interface Problem {
  path: string;
}

// Shapes no redaction recognises: if one is written anywhere, only this test notices.
const value = (name: string) => `${name}-${randomUUID()}`;

/** Every file under `dir`, as text. */
function filesUnder(dir: string | undefined): string {
  if (!dir) return '';
  let out = '';
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    out += statSync(p).isDirectory() ? filesUnder(p) : readFileSync(p, 'latin1');
  }
  return out;
}

describe.each(['direct', 'lambda'] as const)('secret references (%s mode)', (mode) => {
  let gw: TestGantry;
  let vault: MockVault;
  let keyVault: MockKeyVault;
  let sm: MockSecretsManager;
  let provider: MockServer;
  let wsKey: string;
  const clock = new ManualClock(Date.UTC(2026, 4, 1));
  const logLines: string[] = [];
  const answers: string[] = [];
  /** Keys the mock provider accepts right now. */
  const accepted = new Set<string>();
  const used: string[] = [];
  const keys = {
    v1: value('vault-v1'),
    v2: value('vault-v2'),
    v3: value('vault-v3'),
    k8s: value('vault-k8s'),
    token: value('vault-token'),
    azure: value('azure'),
    aws: value('aws'),
  };

  const capture: Logger = {
    debug: (...a) => void logLines.push(JSON.stringify(a)),
    info: (...a) => void logLines.push(JSON.stringify(a)),
    warn: (...a) => void logLines.push(JSON.stringify(a)),
    error: (...a) => void logLines.push(JSON.stringify(a)),
  };

  async function admin(method: string, p: string, body?: unknown, key?: string) {
    const r = await gw.admin(method, p, body, key);
    answers.push(JSON.stringify(r.json));
    return r;
  }

  async function ok(method: string, p: string, body?: unknown): Promise<Json> {
    const r = await admin(method, p, body);
    expect(r.status, `${method} ${p}: ${JSON.stringify(r.json)}`).toBe(200);
    return r.json;
  }

  function expectProblem(r: { status: number; json: Json }, status: number, code: string, ...paths: string[]): void {
    expect(r.status, JSON.stringify(r.json)).toBe(status);
    expect(r.json.errorCode).toBe(code);
    for (const p of paths) expect((r.json.errors as Problem[]).map((e) => e.path)).toContain(p);
  }

  async function chat(slug: string) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gw-api-key': wsKey, 'content-type': 'application/json' },
      body: JSON.stringify({ model: `@${slug}/gpt-4o-mini`, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    const text = await res.text();
    answers.push(text, JSON.stringify(Object.fromEntries(res.headers)));
    return { status: res.status, json: JSON.parse(text) as Json };
  }

  const vaultAuth = () => ({
    vault_addr: vault.url,
    vault_auth_type: 'approle',
    vault_role_id: vault.approle.role_id,
    vault_secret_id: vault.approle.secret_id,
  });

  /** A reference, an integration whose key is mapped to it, and a provider `@slug` in the default workspace. */
  async function wire(slug: string, reference: Json): Promise<string> {
    const ref = await ok('POST', '/v1/secret-references', { name: `Ref ${slug}`, slug: `ref-${slug}`, ...reference });
    await ok('POST', '/v1/integrations', {
      name: `Integration ${slug}`,
      slug: `int-${slug}`,
      ai_provider_id: 'openai',
      configurations: { custom_host: `${provider.url}/v1` },
      secret_mappings: [{ target_field: 'key', secret_reference_id: `ref-${slug}` }],
    });
    await ok('POST', '/v1/providers', { name: `Provider ${slug}`, slug, integration_id: `int-${slug}`, workspace_id: 'default' });
    return ref.id as string;
  }

  beforeAll(async () => {
    [vault, keyVault, sm, provider] = await Promise.all([
      startMockVault(),
      startMockKeyVault(),
      startMockSecretsManager(),
      startMockServer((req) => {
        const key = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1] ?? '';
        used.push(key);
        if (!accepted.has(key))
          return { status: 401, json: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } } };
        return { json: completion('gpt-4o-mini', 'Hello') };
      }),
    ]);
    const tokenFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'gantry-k8s-')), 'token');
    writeFileSync(tokenFile, `${vault.kubernetes.jwt}\n`);
    const env = {
      GW_SECRETS_MANAGER_ENDPOINT: sm.url,
      GW_AZURE_AUTHORITY_HOST: keyVault.url,
      GW_SECRET_CACHE_TTL_SECONDS: '60',
      GW_VAULT_K8S_TOKEN_FILE: tokenFile,
    };
    gw = await startGantry(mode, env, { clock, logger: capture });
    wsKey = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), vault?.close(), keyVault?.close(), sm?.close(), provider?.close()]);
  });

  it('creates a reference answering {id, slug, object}, shows it with every credential masked, lists, filters and updates it', async () => {
    const created = await ok('POST', '/v1/secret-references', {
      name: 'Vault OpenAI',
      manager_type: 'hashicorp_vault',
      auth_config: vaultAuth(),
      secret_path: 'secret/gantry/admin',
      secret_key: 'api_key',
      tags: { team: 'ml' },
    });
    expect(created).toEqual({ id: expect.any(String), slug: 'vault-openai', object: 'secret-reference' });
    const got = await ok('GET', '/v1/secret-references/vault-openai');
    expect(got).toMatchObject({
      id: created.id,
      manager_type: 'hashicorp_vault',
      secret_path: 'secret/gantry/admin',
      secret_key: 'api_key',
      allow_all_workspaces: true,
      status: 'ACTIVE',
      object: 'secret-reference',
    });
    const auth = got.auth_config as Json;
    expect(auth.vault_addr).toBe(vault.url);
    expect(auth.vault_secret_id).not.toBe(vault.approle.secret_id);
    expect(JSON.stringify(got)).not.toContain(vault.approle.secret_id);
    expect(JSON.stringify(got)).not.toContain(vault.approle.role_id);

    await ok('POST', '/v1/secret-references', { name: 'AWS one', manager_type: 'aws_sm', auth_config: {}, secret_path: 'gantry/x', tags: { team: 'infra' } });
    const byType = await ok('GET', '/v1/secret-references?manager_type=aws_sm');
    expect((byType.data as Json[]).map((r) => r.slug)).toEqual(['aws-one']);
    const byTag = await ok('GET', `/v1/secret-references?tags=${encodeURIComponent(JSON.stringify({ team: 'ml' }))}`);
    expect((byTag.data as Json[]).map((r) => r.slug)).toEqual(['vault-openai']);
    const bySearch = await ok('GET', '/v1/secret-references?search=AWS&page_size=1');
    expect(bySearch).toMatchObject({ object: 'list', total: 1, data: [{ slug: 'aws-one', manager_type: 'aws_sm', object: 'secret-reference' }] });
    expectProblem(await admin('GET', '/v1/secret-references?manager_type=gcp'), 400, 'AB01', 'manager_type');

    // A masked credential sent back keeps the stored one; the workspace list replaces "all".
    const updated = await ok('PUT', '/v1/secret-references/vault-openai', {
      auth_config: { vault_secret_id: auth.vault_secret_id },
      allowed_workspaces: ['default'],
    });
    expect(updated).toMatchObject({ allow_all_workspaces: false, allowed_workspaces: [gw.boot.workspaceId] });
    expect((await ok('GET', '/v1/secret-references/vault-openai')).auth_config).toEqual(auth);
    await ok('DELETE', '/v1/secret-references/aws-one');
    expectProblem(await admin('GET', '/v1/secret-references/aws-one'), 404, 'AB08');
  });

  it('names every bad field of a reference with a 400', async () => {
    const missing = await admin('POST', '/v1/secret-references', { manager_type: 'azure_kv', auth_config: { azure_auth_mode: 'entra' } });
    expectProblem(missing, 400, 'AB01', 'name', 'secret_path');
    const azure = await admin('POST', '/v1/secret-references', {
      name: 'a',
      manager_type: 'azure_kv',
      auth_config: { azure_auth_mode: 'entra', azure_vault_url: keyVault.url },
      secret_path: 'k',
    });
    expectProblem(azure, 400, 'AB01', 'auth_config.azure_entra_tenant_id', 'auth_config.azure_entra_client_id', 'auth_config.azure_entra_client_secret');
    const vaultBad = await admin('POST', '/v1/secret-references', {
      name: 'v',
      manager_type: 'hashicorp_vault',
      auth_config: { vault_auth_type: 'ldap', vault_token: 't', colour: 'red' },
      secret_path: 'no-mount',
    });
    expectProblem(vaultBad, 400, 'AB01', 'auth_config.vault_addr', 'auth_config.vault_auth_type', 'auth_config.colour', 'secret_path');
    expectProblem(await admin('GET', '/v1/secret-references?tags=%7Bnot-json'), 400, 'AB01', 'tags');
    const aws = await admin('POST', '/v1/secret-references', {
      name: 'w',
      manager_type: 'aws_sm',
      auth_config: { aws_auth_type: 'accessKey', aws_region: 'nowhere' },
      secret_path: 'p',
    });
    expectProblem(aws, 400, 'AB01', 'auth_config.aws_region', 'auth_config.aws_access_key_id', 'auth_config.aws_secret_access_key');
    expectProblem(
      await admin('POST', '/v1/secret-references', { name: 'x', manager_type: 'gcp_sm', auth_config: {}, secret_path: 'p' }),
      400,
      'AB01',
      'manager_type',
    );
    const both = await admin('POST', '/v1/secret-references', {
      name: 'y',
      manager_type: 'aws_sm',
      auth_config: {},
      secret_path: 'p',
      allow_all_workspaces: true,
      allowed_workspaces: ['default'],
    });
    expectProblem(both, 400, 'AB01', 'allowed_workspaces');
    const unknownWs = await admin('POST', '/v1/secret-references', {
      name: 'z',
      manager_type: 'aws_sm',
      auth_config: {},
      secret_path: 'p',
      allowed_workspaces: ['nope'],
    });
    expectProblem(unknownWs, 400, 'AB01', 'allowed_workspaces[0]');
    // A Vault on a private address is refused unless the operator trusts it.
    const privateVault = await admin('POST', '/v1/secret-references', {
      name: 'p',
      manager_type: 'hashicorp_vault',
      auth_config: { vault_addr: 'http://10.1.2.3:8200', vault_auth_type: 'token', vault_token: 't' },
      secret_path: 's/x',
    });
    expectProblem(privateVault, 400, 'AB01', 'auth_config.vault_addr');
    const mapping = await admin('POST', '/v1/integrations', {
      name: 'm',
      ai_provider_id: 'openai',
      secret_mappings: [{ target_field: 'configurations.colour', secret_reference_id: 'nope' }],
    });
    expectProblem(mapping, 400, 'AB01', 'secret_mappings[0].target_field', 'secret_mappings[0].secret_reference_id');
  });

  it('is for organisation owners and admins: a workspace key gets 403', async () => {
    for (const [method, p] of [
      ['GET', '/v1/secret-references'],
      ['POST', '/v1/secret-references'],
      ['GET', '/v1/secret-references/vault-openai'],
      ['DELETE', '/v1/secret-references/vault-openai'],
    ] as const) {
      const r = await admin(method, p, method === 'POST' ? { name: 'n', manager_type: 'aws_sm', auth_config: {}, secret_path: 'p' } : undefined, wsKey);
      expect(r.status, `${method} ${p}`).toBe(403);
    }
  });

  it('Vault: the key is fetched at request time; a rotation is used by the first request the provider refuses, and after the TTL otherwise', async () => {
    vault.put('secret/gantry/openai', { api_key: keys.v1 });
    accepted.add(keys.v1);
    await wire('vault', { manager_type: 'hashicorp_vault', auth_config: vaultAuth(), secret_path: 'secret/gantry/openai', secret_key: 'api_key' });
    expect((await chat('vault')).status).toBe(200);
    expect(used.at(-1)).toBe(keys.v1);

    // Rotated in Vault and at the provider: the cached key fails once, then the new one is fetched.
    vault.put('secret/gantry/openai', { api_key: keys.v2 });
    accepted.delete(keys.v1);
    accepted.add(keys.v2);
    used.length = 0;
    const rotated = await chat('vault');
    expect(rotated.status, JSON.stringify(rotated.json)).toBe(200);
    expect(used).toEqual([keys.v1, keys.v2]);

    // Rotated in Vault while the old key still works: used within the TTL, the new one after it.
    vault.put('secret/gantry/openai', { api_key: keys.v3 });
    accepted.add(keys.v3);
    await chat('vault');
    expect(used.at(-1)).toBe(keys.v2);
    clock.advance(61_000);
    await chat('vault');
    expect(used.at(-1)).toBe(keys.v3);
  });

  it('Vault: a static token and Kubernetes auth (the pod token logs in) read KV v2 too', async () => {
    const { k8s: k8sKey, token: tokenKey } = keys;
    vault.put('kv/team/k8s', { key: k8sKey });
    vault.put('kv/team/token', { key: tokenKey });
    accepted.add(k8sKey).add(tokenKey);
    await wire('vault-k8s', {
      manager_type: 'hashicorp_vault',
      auth_config: { vault_addr: vault.url, vault_auth_type: 'kubernetes', vault_role: vault.kubernetes.role },
      secret_path: 'kv/team/k8s',
    });
    await wire('vault-token', {
      manager_type: 'hashicorp_vault',
      auth_config: { vault_addr: vault.url, vault_auth_type: 'token', vault_token: vault.rootToken },
      secret_path: 'kv/data/team/token',
    });
    expect((await chat('vault-k8s')).status).toBe(200);
    expect(used.at(-1)).toBe(k8sKey);
    expect(vault.received.some((r) => r.path === '/v1/auth/kubernetes/login')).toBe(true);
    expect((await chat('vault-token')).status).toBe(200);
    expect(used.at(-1)).toBe(tokenKey);
    expect(vault.received.at(-1)?.headers['x-vault-token']).toBe(vault.rootToken);
  });

  it('Vault down: the cached key bridges up to 15 minutes, then a 502 names the reference', async () => {
    vault.sealed = true;
    clock.advance(61_000);
    expect((await chat('vault')).status).toBe(200);
    expect(used.at(-1)).toBe(keys.v3);
    clock.advance(15 * 60_000);
    const down = await chat('vault');
    expect(down.status).toBe(502);
    const message = (down.json.error as { message: string }).message;
    expect(message).toContain('ref-vault');
    expect(message).toContain('503');
    vault.sealed = false;
    expect((await chat('vault')).status).toBe(200);
  });

  it("Vault revoked: the manager's refusal fails closed at once, naming the reference and status", async () => {
    clock.advance(61_000);
    vault.revokeAll();
    const revoked = await chat('vault');
    expect(revoked.status).toBe(502);
    expect((revoked.json.error as { message: string }).message).toMatch(/ref-vault.*(400|403)/);
  });

  it('Azure Key Vault: Entra client credentials, then the secret; a lost permission fails closed', async () => {
    keyVault.set('openai-key', keys.azure);
    accepted.add(keys.azure);
    await wire('azure', {
      manager_type: 'azure_kv',
      auth_config: {
        azure_auth_mode: 'entra',
        azure_vault_url: keyVault.url,
        azure_entra_tenant_id: keyVault.tenant,
        azure_entra_client_id: keyVault.clientId,
        azure_entra_client_secret: keyVault.clientSecret,
      },
      secret_path: 'openai-key',
    });
    expect((await chat('azure')).status).toBe(200);
    expect(used.at(-1)).toBe(keys.azure);
    expect(keyVault.received.map((r) => r.path)).toEqual([`/${keyVault.tenant}/oauth2/v2.0/token`, '/secrets/openai-key?api-version=7.4']);
    // Limited to another workspace: this workspace's request is refused, naming the reference.
    await ok('POST', '/v1/workspaces', { name: 'Other', slug: 'other' });
    await ok('PUT', '/v1/secret-references/ref-azure', { allowed_workspaces: ['other'] });
    const elsewhere = await chat('azure');
    expect(elsewhere.status).toBe(403);
    expect((elsewhere.json.error as { message: string }).message).toContain('ref-azure');
    await ok('PUT', '/v1/secret-references/ref-azure', { allow_all_workspaces: true });
    expect((await chat('azure')).status).toBe(200);
    keyVault.forbidden = true;
    clock.advance(61_000);
    const denied = await chat('azure');
    expect(denied.status).toBe(502);
    expect((denied.json.error as { message: string }).message).toMatch(/ref-azure.*403/);
  });

  it('AWS Secrets Manager: GetSecretValue over JSON 1.1; AccessDenied fails closed', async () => {
    sm.set('gantry/openai', JSON.stringify({ key: keys.aws }));
    accepted.add(keys.aws);
    await wire('aws', {
      manager_type: 'aws_sm',
      auth_config: {
        aws_auth_type: 'accessKey',
        aws_access_key_id: 'AKIAEXAMPLE0000000001',
        aws_secret_access_key: value('aws-secret'),
        aws_region: 'eu-west-1',
      },
      secret_path: 'gantry/openai',
    });
    expect((await chat('aws')).status).toBe(200);
    expect(used.at(-1)).toBe(keys.aws);
    const call = sm.received.at(-1);
    expect(call?.headers['x-amz-target']).toBe('secretsmanager.GetSecretValue');
    expect(call?.headers['content-type']).toBe('application/x-amz-json-1.1');
    expect(call?.json).toEqual({ SecretId: 'gantry/openai' });
    sm.denied = true;
    clock.advance(61_000);
    const denied = await chat('aws');
    expect(denied.status).toBe(502);
    expect((denied.json.error as { message: string }).message).toMatch(/ref-aws.*AccessDeniedException/);
  });

  it('AWS Secrets Manager with an assumed role: STS with the gateway credentials, then GetSecretValue signed with the role', async () => {
    const assumed: AssumeRoleInput[] = [];
    gw.deps.assumeRole = (input) => {
      assumed.push(input);
      return stsAssumeRole({ clock: systemClock, authEndpoints: { sts: `${sm.url}/sts/` } })({
        ...input,
        base: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'gateway-own-secret' },
      });
    };
    sm.denied = false;
    sm.set('gantry/role', keys.aws);
    const role = 'arn:aws:iam::123456789012:role/gantry-secrets';
    await wire('role', {
      manager_type: 'aws_sm',
      auth_config: { aws_auth_type: 'assumedRole', aws_role_arn: role, aws_external_id: 'ext-1', aws_region: 'eu-west-1' },
      secret_path: 'gantry/role',
    });
    expect((await chat('role')).status).toBe(200);
    expect(used.at(-1)).toBe(keys.aws);
    expect(assumed).toEqual([expect.objectContaining({ roleArn: role, externalId: 'ext-1', region: 'eu-west-1' })]);
    expect(String(sm.received.at(-1)?.headers.authorization)).toContain('Credential=ASIAROLE0000000000001/');
    delete gw.deps.assumeRole;
  });

  it('refuses to delete a reference an integration maps (409 AB07)', async () => {
    expectProblem(await admin('DELETE', '/v1/secret-references/ref-aws'), 409, 'AB07');
    await ok('PUT', '/v1/integrations/int-aws', { secret_mappings: [] });
    await ok('DELETE', '/v1/secret-references/ref-aws');
  });

  it('never writes a secret value to the table, the data directory, logs, audit entries, exports or answers', async () => {
    await settleLogs(gw.deps);
    const logs = await ok('GET', '/v1/logs?workspace_id=default&page_size=100');
    for (const row of logs.data as Json[]) answers.push(JSON.stringify(await ok('GET', `/v1/logs/${String(row.id)}`)));
    const audit = await ok('GET', '/v1/audit-logs?page_size=100');
    expect((audit.data as Json[]).length).toBeGreaterThan(0);
    const exported = await ok('POST', '/v1/logs/exports', { workspace_id: 'default', filters: {}, requested_data: ['id', 'request', 'response', 'metadata'] });
    await ok('POST', `/v1/logs/exports/${String(exported.id)}/start`);
    await waitFor(gw.deps, async () => ((await gw.admin('GET', `/v1/logs/exports/${String(exported.id)}`)).json.status === 'success' ? true : undefined));
    const everything = [
      JSON.stringify(await scanTable(gw.deps.repos.table)),
      filesUnder(gw.deps.config.blobDir),
      filesUnder(gw.deps.config.outboxDir),
      logLines.join('\n'),
      answers.join('\n'),
      JSON.stringify(audit),
    ].join('\n');
    expect(everything).toContain(gw.boot.workspaceId);
    const secrets = [...Object.values(keys), vault.approle.secret_id, vault.approle.role_id, vault.rootToken, vault.kubernetes.jwt, keyVault.clientSecret];
    for (const s of secrets) expect(everything.includes(s), `${s.split('-')[0]} found`).toBe(false);
  });
});
