/**
 * Audit entries: one item per administrative action, partitioned by organisation and UTC day so a
 * time range is a handful of key-range queries. Entries are never updated except to record the
 * outcome of a write-ahead entry.
 */
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { AuditEntry, auditDay, redactAuditValue, type AuditRecord } from './audit-entry.ts';
import type { TableClient } from './repositories.ts';

export { AuditEntry, type AuditOutcome, type AuditRecord } from './audit-entry.ts';

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
        ExpressionAttributeValues: { ':s': status, ':o': status < 400 ? 'success' : 'failure', ':r': redactAuditValue(resourceId ?? record.resource_id) },
      }),
    );
  }

  /** Entries in [start, end], oldest first; one query per UTC day of the range. */
  async range(q: AuditQuery): Promise<AuditRecord[]> {
    const out: AuditRecord[] = [];
    const first = Date.parse(`${auditDay(q.start)}T00:00:00.000Z`);
    const last = Date.parse(`${auditDay(q.end)}T00:00:00.000Z`);
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
