/**
 * AWS request signing (SigV4, @smithy/signature-v4 over node:crypto) with the request's or the
 * integration's credentials, session tokens, and roles assumed through STS AssumeRole (injectable;
 * the built-in one calls STS with the given keys). Assumed-role credentials are cached until five
 * minutes before they expire.
 */
import { Hash } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';
import { GantryError, UpstreamError, ValidationError } from '../../http/errors.ts';
import type { AwsCredentials, FetchCredentials, OutgoingRequest, ProviderRequestContext } from '../transform.ts';
import { hostPart, optionString } from './chat-input.ts';

export const AWS_REGION_PATTERN = /^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d$/;
const REFRESH_MARGIN_MS = 5 * 60_000;

export const awsRegion = (ctx: Pick<ProviderRequestContext, 'options'>): string => hostPart(ctx, 'aws_region', AWS_REGION_PATTERN, 'us-east-1');

type SignInput = Parameters<SignatureV4['sign']>[0];

/** Signs the final request (URL, headers, body) for `service` in `region`; the path is escaped as SigV4 requires. */
export async function signAws(req: OutgoingRequest, creds: AwsCredentials, region: string, service: string, now: number): Promise<OutgoingRequest> {
  const signer = new SignatureV4({
    credentials: creds.sessionToken
      ? { accessKeyId: creds.accessKeyId, secretAccessKey: creds.secretAccessKey, sessionToken: creds.sessionToken }
      : { accessKeyId: creds.accessKeyId, secretAccessKey: creds.secretAccessKey },
    region,
    service,
    sha256: Hash.bind(null, 'sha256'),
  });
  const query: Record<string, string> = {};
  req.url.searchParams.forEach((v, k) => {
    query[k] = v;
  });
  const input: SignInput = {
    method: req.method,
    protocol: req.url.protocol,
    hostname: req.url.hostname,
    path: req.url.pathname,
    query,
    headers: { ...req.headers, host: req.url.host },
    body: req.body,
  };
  if (req.url.port) input.port = Number(req.url.port);
  const signed = await signer.sign(input, { signingDate: new Date(now) });
  return { ...req, headers: { ...(signed.headers as Record<string, string>) } };
}

interface CacheEntry {
  creds: Promise<AwsCredentials>;
  expiresAt: number;
}
const assumed = new Map<string, CacheEntry>();

/** Forgets cached assumed-role credentials (tests). */
export const clearAwsCredentialCache = (): void => assumed.clear();

const tag = (xml: string, name: string): string | undefined => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];

/** STS AssumeRole over HTTPS, signed with the base credentials (required). */
export function stsAssumeRole(ctx: Pick<ProviderRequestContext, 'clock' | 'fetch' | 'authEndpoints'>): FetchCredentials {
  return async (input) => {
    if (!input.base) throw ValidationError.field('aws_access_key_id', 'is required to assume aws_role_arn (with aws_secret_access_key)');
    const url = new URL(ctx.authEndpoints?.sts ?? `https://sts.${input.region}.amazonaws.com/`);
    const form = new URLSearchParams({
      Action: 'AssumeRole',
      Version: '2011-06-15',
      RoleArn: input.roleArn,
      RoleSessionName: input.sessionName,
      DurationSeconds: '3600',
    });
    if (input.externalId) form.set('ExternalId', input.externalId);
    const req = await signAws(
      { url, method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }, body: form.toString() },
      input.base,
      input.region,
      'sts',
      ctx.clock.now(),
    );
    const { host: _host, ...headers } = req.headers;
    let res: Response;
    try {
      res = await (ctx.fetch ?? fetch)(req.url, { method: 'POST', headers, body: form.toString() });
    } catch (err) {
      throw new UpstreamError(502, `Could not reach AWS STS at ${url.host}`, { cause: err });
    }
    const xml = await res.text();
    if (!res.ok) {
      const detail = [tag(xml, 'Code'), tag(xml, 'Message')].filter(Boolean).join(': ');
      if (res.status >= 500) throw new UpstreamError(502, `AWS STS AssumeRole failed (${res.status})${detail ? `: ${detail}` : ''}`);
      throw new GantryError(401, 'AB05', 'authentication_error', `AWS STS AssumeRole failed for aws_role_arn (${res.status})${detail ? `: ${detail}` : ''}`, {
        openaiCode: 'provider_auth_failed',
        param: 'aws_role_arn',
      });
    }
    const accessKeyId = tag(xml, 'AccessKeyId');
    const secretAccessKey = tag(xml, 'SecretAccessKey');
    const sessionToken = tag(xml, 'SessionToken');
    const expiration = tag(xml, 'Expiration');
    if (!accessKeyId || !secretAccessKey) throw new UpstreamError(502, 'AWS STS AssumeRole answered without credentials');
    const creds: AwsCredentials = { accessKeyId, secretAccessKey };
    if (sessionToken) creds.sessionToken = sessionToken;
    if (expiration) creds.expiresAt = Date.parse(expiration);
    return creds;
  };
}

/**
 * The credentials a Bedrock call is signed with: the options' keys (and session token), or the
 * role in `aws_role_arn` assumed with them (or with the runtime's own, through the injected
 * `fetchCredentials`). Undefined when the request carries no AWS credentials at all.
 */
export async function awsCredentials(ctx: ProviderRequestContext, region: string): Promise<AwsCredentials | undefined> {
  const accessKeyId = optionString(ctx, 'aws_access_key_id');
  const secretAccessKey = optionString(ctx, 'aws_secret_access_key');
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw ValidationError.field(accessKeyId ? 'aws_secret_access_key' : 'aws_access_key_id', 'is required with the other AWS key');
  }
  let base: AwsCredentials | undefined;
  if (accessKeyId && secretAccessKey) {
    base = { accessKeyId, secretAccessKey };
    const token = optionString(ctx, 'aws_session_token');
    if (token) base.sessionToken = token;
  }
  const roleArn = optionString(ctx, 'aws_role_arn');
  if (!roleArn) return base;
  if (!/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/.test(roleArn)) throw ValidationError.field('aws_role_arn', 'is not an IAM role ARN');
  const externalId = optionString(ctx, 'aws_external_id');
  const key = [roleArn, externalId ?? '', region, base?.accessKeyId ?? 'runtime'].join('|');
  const now = ctx.clock.now();
  const hit = assumed.get(key);
  if (hit && hit.expiresAt - REFRESH_MARGIN_MS > now) return hit.creds;

  const fetchCredentials = ctx.fetchCredentials ?? stsAssumeRole(ctx);
  const request = { roleArn, region, sessionName: 'gantry', ...(externalId ? { externalId } : {}), ...(base ? { base } : {}) };
  const entry: CacheEntry = { creds: fetchCredentials(request), expiresAt: Number.POSITIVE_INFINITY };
  assumed.set(key, entry);
  try {
    const creds = await entry.creds;
    // Without an expiry, keep them for the hour AssumeRole grants by default.
    entry.expiresAt = creds.expiresAt ?? now + 3_600_000;
    return creds;
  } catch (err) {
    assumed.delete(key);
    throw err;
  }
}

/**
 * Role assumption with the gateway's own runtime credentials (the Lambda role's, or the local
 * default chain), for roles that come from an integration only: given to anyone, it would let a
 * caller make the gateway assume any role that trusts it. The credential chain is loaded on first
 * use (it is in the Lambda runtime's AWS SDK).
 */
export function runtimeAssumeRole(ctx: Pick<ProviderRequestContext, 'clock' | 'fetch' | 'authEndpoints'>): FetchCredentials {
  return async (input) => {
    const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
    let identity: { accessKeyId: string; secretAccessKey: string; sessionToken?: string | undefined };
    try {
      identity = await defaultProvider()();
    } catch (err) {
      throw new UpstreamError(502, 'The gateway has no AWS credentials of its own to assume aws_role_arn with', { cause: err });
    }
    const base: AwsCredentials = { accessKeyId: identity.accessKeyId, secretAccessKey: identity.secretAccessKey };
    if (identity.sessionToken) base.sessionToken = identity.sessionToken;
    return stsAssumeRole(ctx)({ ...input, base });
  };
}
