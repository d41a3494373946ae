/**
 * HashiCorp Vault, KV version 2: `GET <vault_addr>/v1/<mount>/data/<path>` answers
 * `{data: {data: {...fields}, metadata: {version}}}`. Authentication by a token (`X-Vault-Token`),
 * or a login that yields one: AppRole (`POST /v1/auth/approle/login {role_id, secret_id}`) or
 * Kubernetes (`POST /v1/auth/kubernetes/login {role, jwt}` with the pod's service account token).
 * `vault_namespace` goes in `X-Vault-Namespace` (Vault Enterprise / HCP).
 */
import { readFile } from 'node:fs/promises';
import type { Clock } from '../ports/clock.ts';
import { kindOfStatus, SecretManagerError, type FetchedSecret, type SecretManagerClient, type SecretSpec } from '../ports/secret-managers.ts';
import { callWithToken, isRecord, TokenCache, type JsonCall } from './http.ts';

export interface VaultOptions {
  http: JsonCall;
  clock: Pick<Clock, 'now'>;
  /** The Kubernetes service account token file (the projected token in the pod). */
  kubernetesTokenFile: string;
}

/** `secret/openai` reads mount `secret`, path `openai`; `secret/data/openai` is taken as written. */
export function kvDataPath(secretPath: string): string {
  const parts = secretPath.replace(/^\/+|\/+$/g, '').split('/');
  if (parts.length < 2) throw new SecretManagerError('rejected', 'secret_path must be "<mount>/<path>" for Vault KV v2');
  if (parts[1] === 'data') return parts.map(encodeURIComponent).join('/');
  return [parts[0], 'data', ...parts.slice(1)].map((p) => encodeURIComponent(p ?? '')).join('/');
}

const vaultErrors = (json: unknown): string => {
  const errors = isRecord(json) && Array.isArray(json.errors) ? json.errors.filter((e) => typeof e === 'string') : [];
  // Vault's error texts name paths and policies, never the secret.
  return errors.length ? `: ${errors.join('; ').slice(0, 200)}` : '';
};

export class VaultClient implements SecretManagerClient {
  readonly #o: VaultOptions;
  readonly #tokens = new TokenCache();
  constructor(o: VaultOptions) {
    this.#o = o;
  }

  async fetch(spec: SecretSpec, signal?: AbortSignal): Promise<FetchedSecret> {
    const auth = spec.auth_config;
    const base = (auth.vault_addr ?? '').replace(/\/+$/, '');
    const path = kvDataPath(spec.secret_path);
    const loginKey =
      auth.vault_auth_type === 'token'
        ? undefined
        : `${base}|${auth.vault_namespace ?? ''}|${auth.vault_auth_type}|${auth.vault_role_id ?? auth.vault_role ?? ''}`;
    const token = () => (loginKey ? this.#loginToken(base, auth, loginKey, signal) : Promise.resolve(auth.vault_token ?? ''));
    const read = (t: string) => this.#o.http(`${base}/v1/${path}`, { headers: this.#headers(auth, t), signal });
    const res = await callWithToken(this.#tokens, loginKey, token, read, (status) => status === 401 || status === 403);
    if (res.status !== 200) throw new SecretManagerError(kindOfStatus(res.status), `Vault answered ${res.status}${vaultErrors(res.json)}`, res.status);
    const data = isRecord(res.json) && isRecord(res.json.data) ? res.json.data : undefined;
    if (!data || !isRecord(data.data)) throw new SecretManagerError('rejected', 'Vault answered without KV v2 data (is the mount KV version 2?)', res.status);
    const version = isRecord(data.metadata) ? String(data.metadata.version ?? '') : '';
    return { value: JSON.stringify(data.data), version };
  }

  #headers(auth: Readonly<Record<string, string>>, token: string): Record<string, string> {
    return { 'x-vault-token': token, ...(auth.vault_namespace ? { 'x-vault-namespace': auth.vault_namespace } : {}) };
  }

  async #loginToken(base: string, auth: Readonly<Record<string, string>>, key: string, signal?: AbortSignal): Promise<string> {
    const now = this.#o.clock.now();
    const cached = this.#tokens.get(key, now);
    if (cached) return cached;
    const method = auth.vault_auth_type === 'kubernetes' ? 'kubernetes' : 'approle';
    const body =
      method === 'approle'
        ? { role_id: auth.vault_role_id, secret_id: auth.vault_secret_id }
        : { role: auth.vault_role, jwt: await this.#serviceAccountToken() };
    const headers = { 'content-type': 'application/json', ...(auth.vault_namespace ? { 'x-vault-namespace': auth.vault_namespace } : {}) };
    const res = await this.#o.http(`${base}/v1/auth/${method}/login`, { method: 'POST', headers, body: JSON.stringify(body), signal });
    if (res.status !== 200)
      throw new SecretManagerError(kindOfStatus(res.status), `Vault ${method} login answered ${res.status}${vaultErrors(res.json)}`, res.status);
    const authBlock = isRecord(res.json) && isRecord(res.json.auth) ? res.json.auth : undefined;
    const token = authBlock?.client_token;
    if (typeof token !== 'string' || token === '')
      throw new SecretManagerError('rejected', `Vault ${method} login answered without a client token`, res.status);
    const lease = typeof authBlock?.lease_duration === 'number' && authBlock.lease_duration > 0 ? authBlock.lease_duration : 300;
    this.#tokens.set(key, token, now, lease);
    return token;
  }

  async #serviceAccountToken(): Promise<string> {
    try {
      return (await readFile(this.#o.kubernetesTokenFile, 'utf8')).trim();
    } catch {
      throw new SecretManagerError('rejected', `no Kubernetes service account token at ${this.#o.kubernetesTokenFile} (GW_VAULT_K8S_TOKEN_FILE)`);
    }
  }
}
