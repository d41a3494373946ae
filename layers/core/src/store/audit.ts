/**
 * Audit entries: one item per administrative action, partitioned by organisation and UTC day so a
 * time range is a handful of key-range queries. Entries are never updated except to record the
 * outcome of a write-ahead entry.
 */
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Entity } from './entity.ts';
import type { TableClient } from './repositories.ts';

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

const day = (iso: string) => iso.slice(0, 10);

export const AuditEntry = new Entity<AuditRecord>({
  name: 'AuditEntry',
  key: (r) => ({ pk: `AUDIT#${r.organisation_id}#${day(r.timestamp)}`, sk: `${r.timestamp}#${r.id}` }),
});

export interface AuditQuery {
  organisationId: string;
  /** Inclusive bounds, ISO 8601. */
  start: string;
  end: string;
}

export class AuditRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  async put(record: AuditRecord): Promise<void> {
    await this.#t.doc.send(new PutCommand({ TableName: this.#t.tableName, Item: AuditEntry.toItem(record) }));
  }

  /** Records the outcome of an entry written ahead of its change. */
  async finish(record: AuditRecord, status: number, resourceId?: string | null): Promise<void> {
    await this.#t.doc.send(
      new UpdateCommand({
        TableName: this.#t.tableName,
        Key: AuditEntry.key(record),
        UpdateExpression: 'SET response_status_code = :s, outcome = :o, resource_id = :r',
        ExpressionAttributeValues: { ':s': status, ':o': status < 400 ? 'success' : 'failure', ':r': resourceId ?? record.resource_id },
      }),
    );
  }

  /** Entries in [start, end], oldest first; one query per UTC day of the range. */
  async range(q: AuditQuery): Promise<AuditRecord[]> {
    const out: AuditRecord[] = [];
    const first = Date.parse(`${day(q.start)}T00:00:00.000Z`);
    const last = Date.parse(`${day(q.end)}T00:00:00.000Z`);
    for (let t = first; t <= last; t += 86_400_000) {
      const d = new Date(t).toISOString().slice(0, 10);
      const items = await this.#t.queryAll(AuditEntry, {
        KeyConditionExpression: 'pk = :p AND sk BETWEEN :a AND :b',
        ExpressionAttributeValues: { ':p': `AUDIT#${q.organisationId}#${d}`, ':a': q.start, ':b': `${q.end}#\uffff` },
        ConsistentRead: true,
      });
      out.push(...items);
    }
    return out;
  }
}
