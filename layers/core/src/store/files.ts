/**
 * Files held by the gateway (`POST /v1/files` without a provider): the metadata of a workspace's
 * files under the workspace (WS#id, FILE#id); the bytes live in blob storage under `blobKey`.
 * Ids carry their creation time first, so a query in key order is a listing newest first.
 */
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { Entity } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { prefixRange } from './prefix-range.ts';
import { queryPages } from './paginate.ts';

export interface HeldFileRecord {
  id: string;
  organisation_id: string;
  workspace_id: string;
  filename: string;
  purpose: string;
  bytes: number;
  /** Unix seconds, as OpenAI's file object has it. */
  created_at: number;
  /** Where the bytes are in blob storage. */
  blob_key: string;
}

export const HeldFile = new Entity<HeldFileRecord>({
  name: 'HeldFile',
  key: (r) => ({ pk: `WS#${r.workspace_id}`, sk: `FILE#${r.id}` }),
});

/** `file-` then the creation time in milliseconds (base 36, fixed width) and 16 random hex digits. */
export function newFileId(nowMs: number): string {
  return `file-${nowMs.toString(36).padStart(10, '0')}${randomBytes(8).toString('hex')}`;
}

export const heldFileBlobKey = (workspaceId: string, id: string): string => `files/${workspaceId}/${id}`;

export interface FilePage {
  data: HeldFileRecord[];
  has_more: boolean;
}

export class HeldFileRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  async put(rec: HeldFileRecord): Promise<void> {
    await this.#t.doc.send(new PutCommand({ TableName: this.#t.tableName, Item: HeldFile.toItem(rec), ConditionExpression: 'attribute_not_exists(pk)' }));
  }

  get(workspaceId: string, id: string): Promise<HeldFileRecord | undefined> {
    return this.#t.get(HeldFile, { pk: `WS#${workspaceId}`, sk: `FILE#${id}` }, true);
  }

  /** Removes the record; the record as it was, or undefined when there was none. */
  async delete(workspaceId: string, id: string): Promise<HeldFileRecord | undefined> {
    const out = await this.#t.doc.send(
      new DeleteCommand({ TableName: this.#t.tableName, Key: { pk: `WS#${workspaceId}`, sk: `FILE#${id}` }, ReturnValues: 'ALL_OLD' }),
    );
    return out.Attributes ? HeldFile.fromItem(out.Attributes) : undefined;
  }

  /** Newest first (or oldest with `asc`), `limit` at most, after the file `after` (a cursor that need not exist any more). */
  async list(workspaceId: string, opts: { limit: number; after?: string; purpose?: string; asc?: boolean }): Promise<FilePage> {
    const pk = `WS#${workspaceId}`;
    const files = prefixRange(pk, 'FILE#');
    const data: HeldFileRecord[] = [];
    const pages = queryPages(this.#t.doc, {
      TableName: this.#t.tableName,
      KeyConditionExpression: files.KeyConditionExpression,
      ExpressionAttributeValues: { ...files.ExpressionAttributeValues, ...(opts.purpose ? { ':purpose': opts.purpose } : {}) },
      ...(opts.purpose ? { FilterExpression: 'purpose = :purpose' } : {}),
      ScanIndexForward: opts.asc === true,
      ConsistentRead: true,
      Limit: opts.limit + 1,
      ...(opts.after ? { ExclusiveStartKey: { pk, sk: `FILE#${opts.after}` } } : {}),
    });
    // A filter applies after DynamoDB's own page limit: read until one more than asked is found.
    for await (const items of pages) {
      for (const item of items) data.push(HeldFile.fromItem(item));
      if (data.length > opts.limit) break;
    }
    return { data: data.slice(0, opts.limit), has_more: data.length > opts.limit };
  }
}
