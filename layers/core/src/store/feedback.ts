/** Feedback on traced requests: one item per feedback in its workspace's partition. */
import { ConflictError, NotFoundError } from '../http/errors.ts';
import { Entity } from './entity.ts';
import type { TableClient } from './repositories.ts';

export interface FeedbackRecord {
  id: string;
  organisation_id: string;
  workspace_id: string;
  trace_id: string;
  /** -10 to 10. */
  value: number;
  /** 0 to 1, default 1. */
  weight: number;
  metadata: Record<string, unknown> | null;
  created_at: string;
  last_updated_at: string;
  created_by: string;
  last_updated_by: string;
}

export const Feedback = new Entity<FeedbackRecord>({
  name: 'Feedback',
  key: (r) => ({ pk: `WS#${r.workspace_id}#FEEDBACK`, sk: r.id }),
  gsi1: (r) => ({ pk: `TRACE#${r.workspace_id}#${r.trace_id}`, sk: `${r.created_at}#${r.id}` }),
});

const isCancelled = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'TransactionCanceledException' || err.name === 'ConditionalCheckFailedException');

export class FeedbackRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  async create(r: FeedbackRecord): Promise<void> {
    try {
      await this.#t.transact([this.#t.putIfAbsent(Feedback.toItem(r))]);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError(`Feedback ${r.id} already exists`);
      throw err;
    }
  }

  get(workspaceId: string, id: string): Promise<FeedbackRecord | undefined> {
    return this.#t.get(Feedback, { pk: `WS#${workspaceId}#FEEDBACK`, sk: id }, true);
  }

  async update(r: FeedbackRecord): Promise<void> {
    try {
      await this.#t.transact([{ Put: { TableName: this.#t.tableName, Item: Feedback.toItem(r), ConditionExpression: 'attribute_exists(pk)' } }]);
    } catch (err) {
      if (isCancelled(err)) throw new NotFoundError(`Feedback ${r.id} not found`);
      throw err;
    }
  }

  /** A workspace's feedback, in no particular order. */
  listByWorkspace(workspaceId: string): Promise<FeedbackRecord[]> {
    return this.#t.queryAll(Feedback, { KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': `WS#${workspaceId}#FEEDBACK` } });
  }

  /** Feedback on one trace, oldest first. */
  byTrace(workspaceId: string, traceId: string): Promise<FeedbackRecord[]> {
    return this.#t.queryAll(Feedback, {
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': `TRACE#${workspaceId}#${traceId}` },
    });
  }
}
