/**
 * AWS Secrets Manager through `@aws-sdk/client-secrets-manager` (imported on first use, so the
 * gateway's cold start does not load it). Credentials: the function's own role (`serviceRole`, the
 * default), access keys (`accessKey`), or a role assumed with the function's credentials
 * (`assumedRole`, with `aws_external_id`). GW_SECRETS_MANAGER_ENDPOINT overrides the endpoint
 * (a VPC endpoint, a local stand-in); it is the operator's setting, not a user's URL.
 */
import type { AwsCredentials, FetchCredentials } from '../providers/transform.ts';
import { SecretManagerError, type FetchedSecret, type SecretManagerClient, type SecretSpec } from '../ports/secret-managers.ts';

export interface AwsSecretsOptions {
  /** The deployment's region, for references that name none. */
  region: string;
  endpoint?: string | undefined;
  /** STS AssumeRole with the runtime's credentials (the gateway's `assumeRole`). */
  assumeRole: FetchCredentials;
  timeoutMs: number;
}

type Sdk = typeof import('@aws-sdk/client-secrets-manager');
type SdkClient = InstanceType<Sdk['SecretsManagerClient']>;

const THROTTLED = new Set(['ThrottlingException', 'TooManyRequestsException', 'RequestLimitExceeded']);
const DENIED = new Set(['AccessDeniedException', 'UnrecognizedClientException', 'InvalidSignatureException', 'ExpiredTokenException', 'DecryptionFailure']);

/** The SDK's error as a manager failure: its name and status, never its message's details. */
function failure(err: unknown): SecretManagerError {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  const name = e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  if (THROTTLED.has(name)) return new SecretManagerError('throttled', `Secrets Manager answered ${name}`, name);
  if (DENIED.has(name)) return new SecretManagerError('denied', `Secrets Manager answered ${name}`, name);
  if (name === 'ResourceNotFoundException') return new SecretManagerError('not_found', `Secrets Manager answered ${name}`, name);
  if (status === undefined || status >= 500)
    return new SecretManagerError('unavailable', `Secrets Manager could not be read (${status ?? name})`, status ?? name);
  return new SecretManagerError('rejected', `Secrets Manager answered ${name}`, name);
}

export class AwsSecretsManagerClient implements SecretManagerClient {
  readonly #o: AwsSecretsOptions;
  #sdk: Promise<Sdk> | undefined;
  readonly #clients = new Map<string, SdkClient>();
  /** Assumed-role credentials until five minutes before they expire (STS is not asked per fetch). */
  readonly #assumed = new Map<string, AwsCredentials & { until: number }>();
  constructor(o: AwsSecretsOptions) {
    this.#o = o;
  }

  async fetch(spec: SecretSpec, signal?: AbortSignal): Promise<FetchedSecret> {
    const sdk = await (this.#sdk ??= import('@aws-sdk/client-secrets-manager'));
    const client = await this.#client(sdk, spec.auth_config);
    let out: { SecretString?: string | undefined; SecretBinary?: Uint8Array | undefined; VersionId?: string | undefined };
    try {
      out = await client.send(new sdk.GetSecretValueCommand({ SecretId: spec.secret_path }), signal ? { abortSignal: signal } : {});
    } catch (err) {
      throw failure(err);
    }
    const value = out.SecretString ?? (out.SecretBinary ? Buffer.from(out.SecretBinary).toString('utf8') : undefined);
    if (value === undefined) throw new SecretManagerError('rejected', 'Secrets Manager answered without a value');
    return { value, version: out.VersionId ?? '' };
  }

  async #client(sdk: Sdk, auth: Readonly<Record<string, string>>): Promise<SdkClient> {
    const region = auth.aws_region || this.#o.region;
    const credentials = await this.#credentials(auth, region);
    const key = [region, credentials?.accessKeyId ?? 'runtime', credentials?.sessionToken ?? ''].join('|');
    let client = this.#clients.get(key);
    if (!client) {
      if (this.#clients.size > 100) this.#clients.clear();
      client = new sdk.SecretsManagerClient({
        region,
        ...(this.#o.endpoint ? { endpoint: this.#o.endpoint } : {}),
        ...(credentials ? { credentials } : {}),
        // One attempt: the resolver decides what a failure means (stale value or 502), promptly.
        maxAttempts: 1,
        requestHandler: { requestTimeout: this.#o.timeoutMs, connectionTimeout: Math.min(this.#o.timeoutMs, 3_000) },
      });
      this.#clients.set(key, client);
    }
    return client;
  }

  async #credentials(auth: Readonly<Record<string, string>>, region: string): Promise<AwsCredentials | undefined> {
    if (auth.aws_auth_type === 'accessKey') return { accessKeyId: auth.aws_access_key_id ?? '', secretAccessKey: auth.aws_secret_access_key ?? '' };
    if (auth.aws_auth_type !== 'assumedRole') return undefined;
    const key = [auth.aws_role_arn, auth.aws_external_id ?? '', region].join('|');
    const hit = this.#assumed.get(key);
    if (hit && hit.until > Date.now()) return hit;
    try {
      const input = {
        roleArn: auth.aws_role_arn ?? '',
        region,
        sessionName: 'gantry-secrets',
        ...(auth.aws_external_id ? { externalId: auth.aws_external_id } : {}),
      };
      const creds = await this.#o.assumeRole(input);
      if (this.#assumed.size > 100) this.#assumed.clear();
      this.#assumed.set(key, { ...creds, until: (creds.expiresAt ?? Date.now() + 3_600_000) - 300_000 });
      return creds;
    } catch (err) {
      const status = (err as { status?: number }).status;
      throw new SecretManagerError(status === 502 ? 'unavailable' : 'denied', `STS AssumeRole of aws_role_arn failed (${status ?? 'error'})`, status);
    }
  }
}
