/**
 * The audit entry of the admin request being served, for repositories that write it in the same
 * transaction as the change. `admin/route.ts` opens the context; `TableClient.transact` adds the
 * entry to the first transaction that commits inside it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Item } from './entity.ts';
import { AuditEntry, type AuditRecord } from './audit-entry.ts';

export interface PendingAudit {
  /**
   * The entry as it is written when the change commits (status 200, success); undefined until a
   * route that authenticates by other means knows who acts.
   */
  record: AuditRecord | undefined;
  /** Set once a transaction carrying the entry committed. */
  committed: boolean;
}

const current = new AsyncLocalStorage<PendingAudit>();

export function runWithAudit<T>(pending: PendingAudit, fn: () => Promise<T>): Promise<T> {
  return current.run(pending, fn);
}

/** The entry to add to a transaction about to run, with the callback to call once it committed. */
export function auditForTransaction(): { item: Item; committed: () => void } | undefined {
  const pending = current.getStore();
  if (!pending?.record || pending.committed) return undefined;
  const record: AuditRecord = { ...pending.record, response_status_code: 200, outcome: 'success' };
  return {
    item: AuditEntry.toItem(record),
    committed: () => {
      pending.record = record;
      pending.committed = true;
    },
  };
}

/** Names the resource the current request changes (a created resource's id), before it is written. */
export function auditTarget(resourceId: string, workspaceId?: string | null): void {
  const pending = current.getStore();
  if (!pending?.record || pending.committed) return;
  pending.record = { ...pending.record, resource_id: resourceId, ...(workspaceId !== undefined ? { workspace_id: workspaceId } : {}) };
}

/** The pending audit of the current request, for routes that learn who acts while they run. */
export function currentAudit(): PendingAudit | undefined {
  return current.getStore();
}
