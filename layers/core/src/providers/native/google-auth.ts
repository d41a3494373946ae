/**
 * OAuth access tokens for Vertex AI from a service-account key (the JWT-bearer grant, RFC 7523):
 * an RS256 assertion signed with node:crypto, exchanged at Google's token endpoint, cached until
 * five minutes before it expires. The token endpoint is fixed (never the key file's `token_uri`),
 * so a key file cannot point the gateway at another host.
 */
import { createPrivateKey, sign } from 'node:crypto';
import { GantryError, UpstreamError, ValidationError } from '../../http/errors.ts';
import type { ProviderRequestContext } from '../transform.ts';
import { isRecord } from '../../http/json.ts';

export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const REFRESH_MARGIN_MS = 5 * 60_000;

export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  private_key_id?: string;
}

const tokens = new Map<string, { token: Promise<string>; expiresAt: number }>();

/** Forgets cached tokens (tests). */
export const clearGoogleTokenCache = (): void => tokens.clear();

/** Reads `vertex_service_account_json` (a JSON string or an object). */
export function serviceAccountKey(raw: unknown): ServiceAccountKey {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw) as unknown;
    } catch {
      throw ValidationError.field('vertex_service_account_json', 'is not valid JSON');
    }
  }
  if (!isRecord(value) || typeof value.client_email !== 'string' || typeof value.private_key !== 'string') {
    throw ValidationError.field('vertex_service_account_json', 'must be a service account key with client_email and private_key');
  }
  const key: ServiceAccountKey = { client_email: value.client_email, private_key: value.private_key };
  if (typeof value.private_key_id === 'string') key.private_key_id = value.private_key_id;
  return key;
}

const b64url = (v: string | Buffer) => Buffer.from(v).toString('base64url');

/** The signed assertion: iss and sub the service account, aud the token endpoint, one hour. */
export function signAssertion(key: ServiceAccountKey, audience: string, scope: string, nowMs: number): string {
  const header: Record<string, string> = { alg: 'RS256', typ: 'JWT' };
  if (key.private_key_id) header.kid = key.private_key_id;
  const iat = Math.floor(nowMs / 1000);
  const claims = { iss: key.client_email, sub: key.client_email, aud: audience, scope, iat, exp: iat + 3600 };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  let privateKey;
  try {
    privateKey = createPrivateKey(key.private_key);
  } catch {
    throw ValidationError.field('vertex_service_account_json', 'private_key is not a valid PEM key');
  }
  return `${input}.${b64url(sign('RSA-SHA256', Buffer.from(input), privateKey))}`;
}

async function mint(
  key: ServiceAccountKey,
  ctx: Pick<ProviderRequestContext, 'clock' | 'fetch' | 'authEndpoints'>,
  url: string,
): Promise<{ token: string; expiresIn: number }> {
  const assertion = signAssertion(key, url, CLOUD_PLATFORM_SCOPE, ctx.clock.now());
  let res: Response;
  try {
    res = await (ctx.fetch ?? fetch)(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
    });
  } catch (err) {
    throw new UpstreamError(502, 'Could not reach the Google token endpoint', { cause: err });
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok || !isRecord(body) || typeof body.access_token !== 'string') {
    const detail = isRecord(body) ? [body.error, body.error_description].filter((s) => typeof s === 'string').join(': ') : '';
    if (res.status >= 500) throw new UpstreamError(502, `The Google token endpoint answered ${res.status}`);
    throw new GantryError(401, 'AB05', 'authentication_error', `Google rejected the service account key (${res.status})${detail ? `: ${detail}` : ''}`, {
      openaiCode: 'provider_auth_failed',
      param: 'vertex_service_account_json',
    });
  }
  return { token: body.access_token, expiresIn: typeof body.expires_in === 'number' ? body.expires_in : 3600 };
}

/** An access token for the key, from the cache while it has more than five minutes left. */
export async function googleAccessToken(rawKey: unknown, ctx: Pick<ProviderRequestContext, 'clock' | 'fetch' | 'authEndpoints'>): Promise<string> {
  const key = serviceAccountKey(rawKey);
  const url = ctx.authEndpoints?.googleToken ?? GOOGLE_TOKEN_URL;
  const cacheKey = `${key.client_email}|${key.private_key_id ?? ''}|${url}`;
  const now = ctx.clock.now();
  const hit = tokens.get(cacheKey);
  if (hit && hit.expiresAt - REFRESH_MARGIN_MS > now) return hit.token;
  const entry = { token: Promise.resolve(''), expiresAt: Number.POSITIVE_INFINITY };
  const minted = mint(key, ctx, url);
  entry.token = minted.then((m) => m.token);
  // Concurrent waiters share the minted token; a failure is reported to this caller below.
  entry.token.catch(() => undefined);
  tokens.set(cacheKey, entry);
  try {
    const m = await minted;
    entry.expiresAt = now + m.expiresIn * 1000;
    return m.token;
  } catch (err) {
    tokens.delete(cacheKey);
    throw err;
  }
}
