/**
 * Secrets never reach the audit log: values under secret-sounding keys, and strings that look like
 * Gantry keys, provider keys, JWTs or invite tokens wherever they are, are replaced by `****`.
 */
const SECRET_KEY = /^(key|api_?key|apikey|secret|token|password|passwd|authorization|credentials?|private_key|client_secret|access_token|refresh_token|id_token|session_token|.*_(secret|token|password|api_key|access_key|secret_key|private_key))$/i;

const SECRET_VALUE = [
  /gw[i]?_[A-Za-z0-9_-]{16,}/g,
  /\bsk-[A-Za-z0-9_-]{10,}/g,
  /\bAKIA[A-Z0-9]{12,}/g,
  /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g,
];

export const MASK = '****';

/** The largest request body kept in an entry, in characters. */
export const MAX_AUDIT_BODY = 16_384;

function maskString(s: string): string {
  let out = s;
  for (const re of SECRET_VALUE) out = out.replace(re, MASK);
  return out;
}

/** A deep copy of `value` with every secret masked. */
export function maskSecrets(value: unknown, depth = 0): unknown {
  if (depth > 32) return MASK;
  if (typeof value === 'string') return maskString(value);
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, depth + 1));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = SECRET_KEY.test(k) && v !== null && v !== undefined && typeof v !== 'boolean' ? MASK : maskSecrets(v, depth + 1);
    }
    return out;
  }
  return value;
}

/** The request body as the audit entry keeps it: masked JSON, or masked text when it is not JSON. */
export function auditBody(text: string): string | null {
  if (text.trim() === '') return null;
  let out: string;
  try {
    out = JSON.stringify(maskSecrets(JSON.parse(text)));
  } catch {
    out = maskString(text);
  }
  return out.length > MAX_AUDIT_BODY ? `${out.slice(0, MAX_AUDIT_BODY)}…` : out;
}
