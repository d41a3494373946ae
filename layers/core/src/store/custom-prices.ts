/**
 * Custom model prices, stored per organisation: one item per (level, provider, model), where the
 * level is the organisation itself or one of its workspaces. All of an organisation's prices are
 * one Query, so the gateway loads them together and caches them.
 */
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { Entity } from './entity.ts';
import { prefixRange } from './prefix-range.ts';
import type { TableClient } from './repositories.ts';

export interface CustomPriceRecord {
  organisation_id: string;
  /** null: the organisation's price; otherwise a workspace override. */
  workspace_id: string | null;
  provider: string;
  model: string;
  /** USD per million tokens; null or absent: not set at this level. */
  input_per_million: number | null;
  output_per_million: number | null;
  cached_input_per_million: number | null;
  created_at: string;
  last_updated_at: string;
  last_updated_by: string | null;
}

export const PRICE_SK_PREFIX = 'PRICE#';

const orgPk = (orgId: string): string => `ORG#${orgId}`;

export const CustomPrice = new Entity<CustomPriceRecord, 'organisation_id' | 'workspace_id' | 'provider' | 'model'>({
  name: 'CustomPrice',
  key: (r) => ({ pk: orgPk(r.organisation_id), sk: `${PRICE_SK_PREFIX}${r.workspace_id ?? '-'}#${r.provider}#${r.model}` }),
});

export class CustomPriceRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  get(orgId: string, workspaceId: string | null, provider: string, model: string): Promise<CustomPriceRecord | undefined> {
    return this.#t.get(CustomPrice, CustomPrice.key({ organisation_id: orgId, workspace_id: workspaceId, provider, model }), true);
  }

  async put(record: CustomPriceRecord): Promise<void> {
    await this.#t.doc.send(new PutCommand({ TableName: this.#t.tableName, Item: CustomPrice.toItem(record) }));
  }

  /** True when a price was there to delete. */
  async delete(orgId: string, workspaceId: string | null, provider: string, model: string): Promise<boolean> {
    const out = await this.#t.doc.send(
      new DeleteCommand({
        TableName: this.#t.tableName,
        Key: CustomPrice.key({ organisation_id: orgId, workspace_id: workspaceId, provider, model }),
        ReturnValues: 'ALL_OLD',
      }),
    );
    return out.Attributes !== undefined;
  }

  /** Every custom price of the organisation, its own and its workspaces'. */
  list(orgId: string): Promise<CustomPriceRecord[]> {
    return this.#t.queryAll(CustomPrice, {
      ...prefixRange(orgPk(orgId), PRICE_SK_PREFIX),
      ConsistentRead: true,
    });
  }
}
