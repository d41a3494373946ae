/**
 * Secret references: a provider credential kept in an external secret manager (AWS Secrets
 * Manager, HashiCorp Vault, Azure Key Vault) and fetched at request time. This module is the port:
 * the gateway core asks a `SecretManagerClient` for a value and knows nothing of how each manager
 * is reached (secrets/aws-sm.ts, vault.ts, azure-kv.ts implement it). Zod-free: the gateway bundles it.
 */

export const MANAGER_TYPES = ['aws_sm', 'hashicorp_vault', 'azure_kv'] as const;
export type ManagerType = (typeof MANAGER_TYPES)[number];

/** auth_config fields that are credentials: encrypted with the cipher, only ever shown masked. */
export const AUTH_SECRET_FIELDS: ReadonlySet<string> = new Set([
  'aws_access_key_id',
  'aws_secret_access_key',
  'vault_token',
  'vault_role_id',
  'vault_secret_id',
  'azure_entra_client_secret',
]);

/** A field of an integration resolved from a secret reference at request time. */
export interface SecretMapping {
  /** `key`, or `configurations.<field>`. */
  target_field: string;
  /** The reference's id. */
  secret_reference_id: string;
  /** Overrides the reference's own secret_key. */
  secret_key?: string | null | undefined;
}

/** What a manager client needs to read one secret (auth_config decrypted). */
export interface SecretSpec {
  manager_type: ManagerType;
  auth_config: Readonly<Record<string, string>>;
  secret_path: string;
}

export interface FetchedSecret {
  /** The secret as the manager holds it (a JSON document when it has several fields). */
  value: string;
  /** The manager's version id of what was read (Vault's version, Azure's version id, AWS VersionId). */
  version: string;
}

/**
 * Why a manager could not be read. `unavailable` (network, timeout, 5xx) and `throttled` allow a
 * recent cached value to be served; every other kind fails closed.
 */
export type SecretFailureKind = 'unavailable' | 'throttled' | 'denied' | 'not_found' | 'rejected';

/** A manager's failure; the message names the manager's status, never a credential or the value. */
export class SecretManagerError extends Error {
  readonly kind: SecretFailureKind;
  /** The manager's HTTP status, or its error name (`AccessDeniedException`), when it answered. */
  readonly status: string | undefined;
  constructor(kind: SecretFailureKind, message: string, status?: number | string) {
    super(message);
    this.name = 'SecretManagerError';
    this.kind = kind;
    this.status = status === undefined ? undefined : String(status);
  }
}

/** The kind of a manager's HTTP answer status. */
export function kindOfStatus(status: number): SecretFailureKind {
  if (status === 401 || status === 403) return 'denied';
  if (status === 404) return 'not_found';
  if (status === 429) return 'throttled';
  if (status >= 500) return 'unavailable';
  return 'rejected';
}

/** One secret manager: reads the current value of a secret. */
export interface SecretManagerClient {
  fetch(spec: SecretSpec, signal?: AbortSignal): Promise<FetchedSecret>;
}

/** A client per manager type (a runtime or a test may replace any of them). */
export type SecretManagers = Readonly<Record<ManagerType, SecretManagerClient>>;

/**
 * The value to use from a fetched secret: `secretKey` picks one field of a JSON secret; without
 * it, a JSON object of exactly one string field gives that field, and anything else is used whole.
 */
export function pickField(value: string, secretKey: string | null | undefined): string {
  let parsed: unknown;
  try {
    parsed = value.trimStart().startsWith('{') ? JSON.parse(value) : undefined;
  } catch {
    parsed = undefined;
  }
  const object = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  if (secretKey) {
    const field = object?.[secretKey];
    if (typeof field !== 'string' || field === '') {
      throw new SecretManagerError('rejected', `the secret has no string field "${secretKey}" (secret_key)`);
    }
    return field;
  }
  const fields = object ? Object.values(object) : [];
  if (object && fields.length === 1 && typeof fields[0] === 'string') return fields[0];
  if (object && fields.length > 1) throw new SecretManagerError('rejected', 'the secret has several fields: set secret_key to pick one');
  return value;
}
