/**
 * Azure Key Vault: `GET <azure_vault_url>/secrets/<name>[/<version>]?api-version=7.4` with a bearer
 * token for `https://vault.azure.net`, answering `{value, id: ".../secrets/<name>/<version>"}`.
 * The token comes from Entra ID's client credentials grant (`POST <authority>/<tenant>/oauth2/v2.0/token`,
 * scope `https://vault.azure.net/.default`) or, for `managed`/`default`, from the runtime's managed
 * identity endpoint (IDENTITY_ENDPOINT with IDENTITY_HEADER, as App Service and Container Apps set them).
 */
import type { Clock } from '../ports/clock.ts';
import { kindOfStatus, SecretManagerError, type FetchedSecret, type SecretManagerClient, type SecretSpec } from '../ports/secret-managers.ts';
import { callWithToken, isRecord, TokenCache, type JsonCall } from './http.ts';

const API_VERSION = '7.4';
const VAULT_RESOURCE = 'https://vault.azure.net';

export interface AzureKeyVaultOptions {
  http: JsonCall;
  clock: Pick<Clock, 'now'>;
  /** Entra ID's authority host (GW_AZURE_AUTHORITY_HOST; sovereign clouds differ). */
  authorityHost: string;
  /** The managed identity endpoint and its header secret, when the runtime has one. */
  identityEndpoint?: string | undefined;
  identityHeader?: string | undefined;
}

const azureError = (json: unknown): string => {
  const error = isRecord(json) ? json.error : undefined;
  if (isRecord(error)) return `: ${String(error.code ?? '')}`.slice(0, 120);
  if (typeof error === 'string') return `: ${error}`.slice(0, 120);
  return '';
};

export class AzureKeyVaultClient implements SecretManagerClient {
  readonly #o: AzureKeyVaultOptions;
  readonly #tokens = new TokenCache();
  constructor(o: AzureKeyVaultOptions) {
    this.#o = o;
  }

  async fetch(spec: SecretSpec, signal?: AbortSignal): Promise<FetchedSecret> {
    const auth = spec.auth_config;
    const vault = (auth.azure_vault_url ?? '').replace(/\/+$/, '');
    const name = spec.secret_path
      .replace(/^\/+|\/+$/g, '')
      .split('/')
      .map(encodeURIComponent)
      .join('/');
    const tokenKey =
      auth.azure_auth_mode === 'entra' ? `entra|${auth.azure_entra_tenant_id}|${auth.azure_entra_client_id}` : `managed|${auth.azure_managed_client_id ?? ''}`;
    const read = (token: string) =>
      this.#o.http(`${vault}/secrets/${name}?api-version=${API_VERSION}`, { headers: { authorization: `Bearer ${token}` }, signal });
    const res = await callWithToken(
      this.#tokens,
      tokenKey,
      () => this.#token(auth, tokenKey, signal),
      read,
      (status) => status === 401,
    );
    if (res.status !== 200) throw new SecretManagerError(kindOfStatus(res.status), `Key Vault answered ${res.status}${azureError(res.json)}`, res.status);
    const body = isRecord(res.json) ? res.json : {};
    if (typeof body.value !== 'string') throw new SecretManagerError('rejected', 'Key Vault answered without a secret value', res.status);
    const id = typeof body.id === 'string' ? body.id : '';
    return { value: body.value, version: id.slice(id.lastIndexOf('/') + 1) };
  }

  async #token(auth: Readonly<Record<string, string>>, key: string, signal?: AbortSignal): Promise<string> {
    const now = this.#o.clock.now();
    const cached = this.#tokens.get(key, now);
    if (cached) return cached;
    const res = auth.azure_auth_mode === 'entra' ? await this.#entraToken(auth, signal) : await this.#managedToken(auth, signal);
    if (res.status !== 200)
      throw new SecretManagerError(kindOfStatus(res.status), `the Entra token endpoint answered ${res.status}${azureError(res.json)}`, res.status);
    const body = isRecord(res.json) ? res.json : {};
    if (typeof body.access_token !== 'string')
      throw new SecretManagerError('rejected', 'the Entra token endpoint answered without an access token', res.status);
    const lifetime = Number(body.expires_in ?? 0);
    this.#tokens.set(key, body.access_token, now, Number.isFinite(lifetime) && lifetime > 0 ? lifetime : 300);
    return body.access_token;
  }

  #entraToken(auth: Readonly<Record<string, string>>, signal?: AbortSignal) {
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: auth.azure_entra_client_id ?? '',
      client_secret: auth.azure_entra_client_secret ?? '',
      scope: `${VAULT_RESOURCE}/.default`,
    });
    const url = `${this.#o.authorityHost.replace(/\/+$/, '')}/${encodeURIComponent(auth.azure_entra_tenant_id ?? '')}/oauth2/v2.0/token`;
    return this.#o.http(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString(), signal });
  }

  /** The operator's runtime endpoint (not a user's URL), so it is called with the plain fetch. */
  async #managedToken(auth: Readonly<Record<string, string>>, signal?: AbortSignal) {
    if (!this.#o.identityEndpoint || !this.#o.identityHeader) {
      throw new SecretManagerError(
        'rejected',
        'this runtime has no managed identity (IDENTITY_ENDPOINT and IDENTITY_HEADER are not set): use azure_auth_mode "entra"',
      );
    }
    const url = new URL(this.#o.identityEndpoint);
    url.searchParams.set('api-version', '2019-08-01');
    url.searchParams.set('resource', VAULT_RESOURCE);
    if (auth.azure_managed_client_id) url.searchParams.set('client_id', auth.azure_managed_client_id);
    try {
      const res = await fetch(url, { headers: { 'x-identity-header': this.#o.identityHeader }, signal: signal ?? AbortSignal.timeout(5_000) });
      return { status: res.status, json: (await res.json().catch(() => undefined)) as unknown };
    } catch {
      throw new SecretManagerError('unavailable', 'the managed identity endpoint could not be reached');
    }
  }
}
