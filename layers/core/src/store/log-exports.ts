/**
 * Log export records: one item per export in its organisation's partition, and in its workspace's
 * list on gsi1, newest first. The job that fills them is observability/exports.ts.
 */
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Entity } from './entity.ts';
import { prefixRange } from './prefix-range.ts';
import type { TableClient } from './repositories.ts';

export type ExportStatus = 'draft' | 'in_progress' | 'success' | 'failed' | 'stopped';

export interface SinkState {
  uploadId?: string;
  etags: string[];
}

/** `C`: the names of the columns an export may ask for (observability/log-views.ts knows them). */
export interface ExportRecord<C extends string = string> {
  id: string;
  organisation_id: string;
  workspace_id: string;
  /** As given (reference names); parsed again when the export starts. */
  filters: Record<string, unknown>;
  requested_data: C[];
  description: string;
  status: ExportStatus;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
  /** Logs matching at the last count (rollups), and logs written by the current run. */
  total: number;
  exported: number;
  parts: number;
  /** The current run; messages of older runs are dropped. */
  run: string | null;
  /** The range fixed when the run started (ms), so that resumed pages read the same logs. */
  range_from: number | null;
  range_to: number | null;
  cursor: string | null;
  skipped: number;
  sink: SinkState | null;
  file_key: string | null;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
}

const EXPORT_SK_PREFIX = 'LOGEXPORT#';
const orgPk = (orgId: string): string => `ORG#${orgId}`;
const workspaceList = (workspaceId: string): string => `WS#${workspaceId}#LOGEXPORTS`;

export const LogExport = new Entity<ExportRecord, 'organisation_id' | 'id'>({
  name: 'LogExport',
  key: (r) => ({ pk: orgPk(r.organisation_id), sk: `${EXPORT_SK_PREFIX}${r.id}` }),
  gsi1: (r) => ({ pk: workspaceList(r.workspace_id), sk: `${r.created_at}#${r.id}` }),
});

export class ExportStore<C extends string = string> {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  // The items are this store's own writes: their columns are the `C` they were written with.
  async get(orgId: string, id: string): Promise<ExportRecord<C> | undefined> {
    return (await this.#t.get(LogExport, LogExport.key({ organisation_id: orgId, id }), true)) as ExportRecord<C> | undefined;
  }

  async put(r: ExportRecord<C>): Promise<void> {
    await this.#t.doc.send(new PutCommand({ TableName: this.#t.tableName, Item: LogExport.toItem(r) }));
  }

  /** Saves a change only if the export is still in the given run and state (a cancel wins). */
  async saveIf(r: ExportRecord<C>, run: string | null, status: ExportStatus): Promise<boolean> {
    const item = LogExport.toItem(r);
    const names: Record<string, string> = { '#run': 'run', '#status': 'status' };
    const values: Record<string, unknown> = { ':run': run, ':status': status };
    const sets: string[] = [];
    let i = 0;
    for (const [k, v] of Object.entries(item)) {
      if (k === 'pk' || k === 'sk') continue;
      names[`#f${i}`] = k;
      values[`:f${i}`] = v;
      sets.push(`#f${i} = :f${i}`);
      i++;
    }
    try {
      await this.#t.doc.send(
        new UpdateCommand({
          TableName: this.#t.tableName,
          Key: LogExport.key(r),
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: '#run = :run AND #status = :status',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof Error && err.name === 'ConditionalCheckFailedException') return false;
      throw err;
    }
  }

  /** The organisation's exports (or one workspace's), newest first. */
  async list(orgId: string, workspaceId?: string): Promise<ExportRecord<C>[]> {
    const rows = workspaceId
      ? await this.#t.queryAll(LogExport, {
          IndexName: 'gsi1',
          KeyConditionExpression: 'gsi1pk = :p',
          ExpressionAttributeValues: { ':p': workspaceList(workspaceId) },
        })
      : await this.#t.queryAll(LogExport, prefixRange(orgPk(orgId), EXPORT_SK_PREFIX));
    return (rows as ExportRecord<C>[]).sort((a, b) => b.created_at.localeCompare(a.created_at) || a.id.localeCompare(b.id));
  }
}
