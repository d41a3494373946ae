/** Builders for store records and a raw table scan, shared by the store, policy and e2e tests. */
import { randomUUID } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { newKeyRecord } from '../../layers/core/src/admin/api-keys/service.ts';
import type { ApiKeyRecord, WorkspaceRecord } from '../../layers/core/src/store/entities.ts';
import type { TableClient } from '../../layers/core/src/store/repositories.ts';

/** A workspace record with the given slug; `overrides` replace any field. */
export function workspaceRecord(organisationId: string, slug: string, overrides: Partial<WorkspaceRecord> = {}): WorkspaceRecord {
  const now = new Date(Date.UTC(2026, 0, 1)).toISOString();
  return {
    id: randomUUID(),
    organisation_id: organisationId,
    slug,
    name: `Workspace ${slug}`,
    description: null,
    status: 'active',
    defaults: null,
    created_at: now,
    last_updated_at: now,
    ...overrides,
  };
}

export interface KeyFields {
  organisation_id: string;
  workspace_id?: string | null;
  user_id?: string | null;
  type?: ApiKeyRecord['type'];
  name?: string;
  scopes?: string[];
  expires_at?: string | null;
  owner?: boolean;
}

/** A new API key record (not stored) and its raw key. */
export function keyRecord(fields: KeyFields, nowMs: number, rawKey?: string): { record: ApiKeyRecord; key: string } {
  const workspaceId = fields.workspace_id ?? null;
  return newKeyRecord(
    {
      organisation_id: fields.organisation_id,
      workspace_id: workspaceId,
      user_id: fields.user_id ?? null,
      type: fields.type ?? (workspaceId === null ? 'organisation-service' : 'workspace-service'),
      name: fields.name ?? 'test key',
      description: null,
      scopes: fields.scopes ?? ['completions.write'],
      expires_at: fields.expires_at ?? null,
      owner: fields.owner ?? false,
      created_by: null,
    },
    nowMs,
    rawKey,
  );
}

/** Every item of the table, as stored (a full scan: tests only). */
export async function scanTable(table: TableClient): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await table.doc.send(new ScanCommand({ TableName: table.tableName, ExclusiveStartKey: start, ConsistentRead: true }));
    items.push(...((page.Items ?? []) as Record<string, unknown>[]));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}
