/**
 * Real HTTP stand-ins for the three secret managers, speaking their wire formats:
 * - HashiCorp Vault: KV v2 reads (`GET /v1/<mount>/data/<path>`, `X-Vault-Token`, `X-Vault-Namespace`),
 *   AppRole and Kubernetes logins (`POST /v1/auth/{approle,kubernetes}/login`), `{errors: [...]}`
 *   on failure, 503 while sealed;
 * - Azure Key Vault with the Entra ID token endpoint on the same server (`POST /<tenant>/oauth2/v2.0/token`,
 *   client credentials; `GET /secrets/<name>?api-version=7.4` with a bearer token);
 * - AWS Secrets Manager's JSON 1.1 protocol (`POST /`, `X-Amz-Target: secretsmanager.GetSecretValue`),
 *   reached through the SDK's endpoint override.
 */
import { randomUUID } from 'node:crypto';
import { startMockServer, type MockServer, type Recorded, type Reply } from './mock-http.ts';

interface Versioned {
  data: Record<string, string>;
  version: number;
}

export interface MockVault extends MockServer {
  /** Writes a new version of a KV v2 secret (`mount/path`). */
  put(path: string, data: Record<string, string>): void;
  approle: { role_id: string; secret_id: string };
  kubernetes: { role: string; jwt: string };
  /** A static token allowed to read everything. */
  rootToken: string;
  /** Every token issued or known is refused from now on (policy removed / token revoked). */
  revokeAll(): void;
  sealed: boolean;
}

export async function startMockVault(namespace?: string): Promise<MockVault> {
  const secrets = new Map<string, Versioned>();
  const tokens = new Set<string>();
  let revoked = false;
  const state = {
    rootToken: `hvs.root-${randomUUID()}`,
    approle: { role_id: randomUUID(), secret_id: randomUUID() },
    kubernetes: { role: 'gantry', jwt: `k8s-jwt-${randomUUID()}` },
    sealed: false,
  };
  tokens.add(state.rootToken);
  const errors = (status: number, ...messages: string[]): Reply => ({ status, json: { errors: messages } });
  const route = (req: Recorded): Reply => {
    if (self.sealed) return errors(503, 'Vault is sealed');
    if (namespace !== undefined && req.headers['x-vault-namespace'] !== namespace) return errors(403, 'permission denied');
    const body = (req.json ?? {}) as Record<string, string>;
    const login = (ok: boolean): Reply => {
      if (!ok || revoked) return errors(400, 'invalid role or secret ID');
      const token = `hvs.${randomUUID()}`;
      tokens.add(token);
      return { json: { auth: { client_token: token, lease_duration: 3600, renewable: true, policies: ['default'] } } };
    };
    if (req.method === 'POST' && req.path === '/v1/auth/approle/login')
      return login(body.role_id === state.approle.role_id && body.secret_id === state.approle.secret_id);
    if (req.method === 'POST' && req.path === '/v1/auth/kubernetes/login')
      return login(body.role === state.kubernetes.role && body.jwt === state.kubernetes.jwt);
    const m = /^\/v1\/([^/]+)\/data\/(.+)$/.exec(req.path);
    if (req.method !== 'GET' || !m) return errors(404);
    const token = req.headers['x-vault-token'];
    if (revoked || typeof token !== 'string' || !tokens.has(token)) return errors(403, 'permission denied');
    const found = secrets.get(`${m[1]}/${decodeURIComponent(m[2] ?? '')}`);
    if (!found) return errors(404);
    return {
      json: {
        request_id: randomUUID(),
        lease_duration: 0,
        data: { data: found.data, metadata: { created_time: new Date().toISOString(), deletion_time: '', destroyed: false, version: found.version } },
      },
    };
  };
  const server = await startMockServer(route);
  const self: MockVault = Object.assign(server, state, {
    put(path: string, data: Record<string, string>) {
      secrets.set(path, { data, version: (secrets.get(path)?.version ?? 0) + 1 });
    },
    revokeAll() {
      revoked = true;
    },
  });
  return self;
}

export interface MockKeyVault extends MockServer {
  tenant: string;
  clientId: string;
  clientSecret: string;
  set(name: string, value: string): void;
  /** The vault's access policy no longer lets the client read secrets. */
  forbidden: boolean;
}

export async function startMockKeyVault(): Promise<MockKeyVault> {
  const secrets = new Map<string, { value: string; version: string }>();
  const tokens = new Set<string>();
  const state = { tenant: randomUUID(), clientId: randomUUID(), clientSecret: `azs~${randomUUID()}`, forbidden: false };
  const route = (req: Recorded): Reply => {
    if (req.method === 'POST' && req.path === `/${state.tenant}/oauth2/v2.0/token`) {
      const form = new URLSearchParams(req.body);
      const ok =
        form.get('grant_type') === 'client_credentials' &&
        form.get('client_id') === state.clientId &&
        form.get('client_secret') === state.clientSecret &&
        form.get('scope') === 'https://vault.azure.net/.default';
      if (!ok) return { status: 401, json: { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.' } };
      const token = `eyJ0eXAiOiJKV1QifQ.${Buffer.from(randomUUID()).toString('base64url')}.sig`;
      tokens.add(token);
      return { json: { token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: token } };
    }
    const m = /^\/secrets\/([^/?]+)\?api-version=7\.4$/.exec(req.path);
    if (req.method !== 'GET' || !m) return { status: 400, json: { error: { code: 'BadParameter', message: 'unknown operation' } } };
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!bearer || !tokens.has(bearer)) {
      return {
        status: 401,
        headers: { 'www-authenticate': `Bearer authorization="https://login.microsoftonline.com/${state.tenant}", resource="https://vault.azure.net"` },
        json: { error: { code: 'Unauthorized', message: 'AKV10000: Request is missing a Bearer or PoP token.' } },
      };
    }
    if (self.forbidden)
      return {
        status: 403,
        json: {
          error: { code: 'Forbidden', message: 'The user, group or application does not have secrets get permission', innererror: { code: 'AccessDenied' } },
        },
      };
    const found = secrets.get(decodeURIComponent(m[1] ?? ''));
    if (!found) return { status: 404, json: { error: { code: 'SecretNotFound', message: 'A secret with (name/id) was not found in this key vault.' } } };
    return {
      json: {
        value: found.value,
        id: `${server.url}/secrets/${m[1]}/${found.version}`,
        attributes: { enabled: true, created: 1_700_000_000, updated: 1_700_000_000, recoveryLevel: 'Recoverable+Purgeable' },
        tags: {},
      },
    };
  };
  const server = await startMockServer(route);
  const self: MockKeyVault = Object.assign(server, state, {
    set(name: string, value: string) {
      secrets.set(name, { value, version: randomUUID().replace(/-/g, '') });
    },
  });
  return self;
}

export interface MockSecretsManager extends MockServer {
  set(name: string, value: string): void;
  /** The caller's IAM policy no longer allows GetSecretValue. */
  denied: boolean;
}

export async function startMockSecretsManager(): Promise<MockSecretsManager> {
  const secrets = new Map<string, { value: string; version: string }>();
  const state = { denied: false };
  const error = (type: string, message: string): Reply => ({ status: 400, headers: { 'x-amzn-requestid': randomUUID() }, json: { __type: type, message } });
  const route = (req: Recorded): Reply => {
    // STS beside it (`/sts/`): AssumeRole for references that name a role.
    if (req.path === '/sts/' && new URLSearchParams(req.body).get('Action') === 'AssumeRole') {
      const expires = new Date(Date.now() + 3_600_000).toISOString();
      return {
        headers: { 'content-type': 'text/xml' },
        text: `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>ASIAROLE0000000000001</AccessKeyId><SecretAccessKey>role-secret</SecretAccessKey><SessionToken>role-session-token</SessionToken><Expiration>${expires}</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>`,
      };
    }
    if (req.method !== 'POST' || req.headers['x-amz-target'] !== 'secretsmanager.GetSecretValue')
      return error('UnknownOperationException', 'unknown operation');
    if (!String(req.headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 '))
      return error('MissingAuthenticationTokenException', 'Missing Authentication Token');
    const id = (req.json as { SecretId?: string } | undefined)?.SecretId ?? '';
    if (self.denied) return error('AccessDeniedException', `User is not authorized to perform: secretsmanager:GetSecretValue on resource: ${id}`);
    const found = secrets.get(id);
    if (!found) return error('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
    return {
      headers: { 'content-type': 'application/x-amz-json-1.1' },
      json: {
        ARN: `arn:aws:secretsmanager:us-east-1:123456789012:secret:${id}-AbCdEf`,
        Name: id,
        VersionId: found.version,
        SecretString: found.value,
        VersionStages: ['AWSCURRENT'],
        CreatedDate: 1_700_000_000.5,
      },
    };
  };
  const server = await startMockServer(route);
  const self: MockSecretsManager = Object.assign(server, state, {
    set(name: string, value: string) {
      secrets.set(name, { value, version: randomUUID() });
    },
  });
  return self;
}
