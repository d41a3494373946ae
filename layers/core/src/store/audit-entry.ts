/**
 * The audit entry as data: its record and key layout, apart from the repository so that the audit
 * context (store/audit-context.ts), which every repository's transaction reads, does not import them.
 */
import { AUDIT_MASK, redactAttributes, redactText } from '../security/redact.ts';
import { Entity, type Item } from './entity.ts';

export type AuditOutcome = 'pending' | 'success' | 'failure';

export interface AuditRecord {
  id: string;
  organisation_id: string;
  /** ISO 8601 with milliseconds. */
  timestamp: string;
  method: string;
  uri: string;
  /** JSON of the query parameters, or null. */
  query_params: string | null;
  request_id: string;
  /** JSON of the request body with secrets masked, or null. */
  request_body: string | null;
  user_id: string | null;
  /** `system` for the service's own changes (key expiry, automatic rotation, usage resets). */
  user_type: 'user' | 'api_key' | 'system' | 'anonymous';
  api_key_id: string | null;
  email: string | null;
  role: string | null;
  /** The workspace the action concerns (the caller's, or the one the request names). */
  workspace_id: string | null;
  resource_type: string;
  resource_id: string | null;
  action: string;
  /** Null while a write-ahead entry waits for its outcome. */
  response_status_code: number | null;
  outcome: AuditOutcome;
  client_ip: string | null;
  forwarded_for: string | null;
  user_agent: string | null;
}

/** The UTC day (YYYY-MM-DD) of an ISO 8601 time: entries are partitioned by it. */
export const auditDay = (iso: string): string => iso.slice(0, 10);

/**
 * What the service sets itself (ids, the time, the item's key, enums): every other attribute may
 * come from the request (a path, a query, an id field, a header) and is redacted like a body.
 */
const OWN_ATTRIBUTES: ReadonlySet<keyof AuditRecord> = new Set(['id', 'organisation_id', 'timestamp', 'request_id', 'user_type', 'outcome']);

/** The entry with the secrets in its request-derived attributes masked (a key pasted into `workspace_id` ...). */
export const redactAudit = (record: AuditRecord): AuditRecord => redactAttributes(record, OWN_ATTRIBUTES as ReadonlySet<string>, AUDIT_MASK);

/** One attribute as it is stored, for writes that set it alone (the outcome of a write-ahead entry). */
export const redactAuditValue = (value: string | null): string | null => (value === null ? null : redactText(value, AUDIT_MASK));

/** Every writer (the repository, transactions carrying an entry) turns the record into an item here: redacted once for all. */
class AuditEntity extends Entity<AuditRecord> {
  override toItem(record: AuditRecord): Item {
    return super.toItem(redactAudit(record));
  }
}

export const AuditEntry = new AuditEntity({
  name: 'AuditEntry',
  key: (r) => ({ pk: `AUDIT#${r.organisation_id}#${auditDay(r.timestamp)}`, sk: `${r.timestamp}#${r.id}` }),
});
