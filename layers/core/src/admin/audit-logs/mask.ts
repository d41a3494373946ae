/**
 * What the audit log keeps of a request: bodies and query strings with every secret masked by the
 * one redaction of request logs and exports (`security/redact.ts`), under the audit log's
 * placeholder `****`.
 */
import { AUDIT_MASK, redact, redactQuery, redactText } from '../../security/redact.ts';

export const MASK = AUDIT_MASK;

/** The largest request body kept in an entry, in characters. */
export const MAX_AUDIT_BODY = 16_384;

/** `value` with every secret masked. */
export const maskSecrets = (value: unknown): unknown => redact(value, MASK);

/** The request body as the audit entry keeps it: masked JSON, or masked text when it is not JSON. */
export function auditBody(text: string): string | null {
  if (text.trim() === '') return null;
  let out: string;
  try {
    out = JSON.stringify(maskSecrets(JSON.parse(text)));
  } catch {
    out = redactText(text, MASK);
  }
  return out.length > MAX_AUDIT_BODY ? `${out.slice(0, MAX_AUDIT_BODY)}…` : out;
}

/** The query string as the audit entry keeps it (JSON of its parameters), or null without one. */
export function auditQuery(query: URLSearchParams): string | null {
  return query.size > 0 ? JSON.stringify(redactQuery(query, MASK)) : null;
}
