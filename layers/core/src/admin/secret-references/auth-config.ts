/**
 * auth_config of a secret reference, per manager and auth mode, as users of each manager write it:
 * aws_sm (`aws_auth_type` serviceRole, accessKey or assumedRole), hashicorp_vault
 * (`vault_auth_type` token, approle or kubernetes) and azure_kv (`azure_auth_mode` entra, managed or
 * default). The result is split: plain fields (addresses, regions, ids) and credentials
 * (AUTH_SECRET_FIELDS), which are encrypted and only shown masked. Manager URLs pass the SSRF guard.
 */
import { ValidationError, type FieldProblem } from '../../http/errors.ts';
import { AUTH_SECRET_FIELDS, type ManagerType } from '../../ports/secret-managers.ts';
import { parseOutboundUrl, type TrustedHosts } from '../../security/ssrf.ts';

interface Mode {
  /** The field that names the mode, and its default when absent. */
  field: string;
  fallback?: string;
  /** Fields each mode requires. */
  requires: Readonly<Record<string, readonly string[]>>;
}

const MANAGERS: Readonly<Record<ManagerType, { fields: readonly string[]; urls: readonly string[]; required: readonly string[]; mode: Mode }>> = {
  aws_sm: {
    fields: ['aws_auth_type', 'aws_region', 'aws_access_key_id', 'aws_secret_access_key', 'aws_role_arn', 'aws_external_id'],
    urls: [],
    required: [],
    mode: {
      field: 'aws_auth_type',
      fallback: 'serviceRole',
      requires: { serviceRole: [], accessKey: ['aws_access_key_id', 'aws_secret_access_key', 'aws_region'], assumedRole: ['aws_role_arn'] },
    },
  },
  hashicorp_vault: {
    fields: ['vault_addr', 'vault_namespace', 'vault_auth_type', 'vault_token', 'vault_role_id', 'vault_secret_id', 'vault_role'],
    urls: ['vault_addr'],
    required: ['vault_addr'],
    mode: { field: 'vault_auth_type', requires: { token: ['vault_token'], approle: ['vault_role_id', 'vault_secret_id'], kubernetes: ['vault_role'] } },
  },
  azure_kv: {
    fields: ['azure_vault_url', 'azure_auth_mode', 'azure_entra_tenant_id', 'azure_entra_client_id', 'azure_entra_client_secret', 'azure_managed_client_id'],
    urls: ['azure_vault_url'],
    required: ['azure_vault_url'],
    mode: {
      field: 'azure_auth_mode',
      requires: { entra: ['azure_entra_tenant_id', 'azure_entra_client_id', 'azure_entra_client_secret'], managed: [], default: [] },
    },
  },
};

const FORMATS: Readonly<Record<string, [RegExp, string]>> = {
  aws_region: [/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be an AWS region such as us-east-1'],
  aws_role_arn: [/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/, 'must be an IAM role ARN'],
};

export interface SplitAuth {
  plain: Record<string, string>;
  secret: Record<string, string>;
}

/** Every problem of `raw` for the manager, named `auth_config.<field>`; throws a ValidationError when there are any. */
export function validateAuthConfig(manager: ManagerType, raw: Record<string, unknown>, trusted: TrustedHosts): SplitAuth {
  const spec = MANAGERS[manager];
  const problems: FieldProblem[] = [];
  const split: SplitAuth = { plain: {}, secret: {} };
  for (const [key, value] of Object.entries(raw)) {
    const at = `auth_config.${key}`;
    if (!spec.fields.includes(key)) {
      problems.push({ path: at, message: `is not an auth_config field of ${manager}; known: ${spec.fields.join(', ')}` });
      continue;
    }
    if (value === null || value === undefined) continue;
    if (typeof value !== 'string' || value.trim() === '' || value.length > 4096) {
      problems.push({ path: at, message: 'must be a non-empty string of at most 4096 characters' });
      continue;
    }
    const format = FORMATS[key];
    if (format && !format[0].test(value)) problems.push({ path: at, message: format[1] });
    if (spec.urls.includes(key)) {
      try {
        parseOutboundUrl(value, at, trusted);
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        problems.push(...err.problems);
      }
    }
    (AUTH_SECRET_FIELDS.has(key) ? split.secret : split.plain)[key] = value;
  }
  const all = { ...split.plain, ...split.secret };
  const mode = all[spec.mode.field] ?? spec.mode.fallback;
  const modes = Object.keys(spec.mode.requires);
  if (mode === undefined) problems.push({ path: `auth_config.${spec.mode.field}`, message: `is required: one of ${modes.join(', ')}` });
  else if (!modes.includes(mode)) problems.push({ path: `auth_config.${spec.mode.field}`, message: `must be one of ${modes.join(', ')}` });
  for (const field of [...spec.required, ...(mode ? (spec.mode.requires[mode] ?? []) : [])]) {
    if (all[field] === undefined && !problems.some((p) => p.path === `auth_config.${field}`)) {
      problems.push({
        path: `auth_config.${field}`,
        message: `is required${spec.required.includes(field) ? ` for ${manager}` : ` when ${spec.mode.field} is ${mode}`}`,
      });
    }
  }
  if (problems.length) throw new ValidationError(problems);
  return split;
}
