/**
 * Saved routing configs: versioned, named by id or slug, one optional default per workspace.
 * Layout: the config under its organisation (ORG#, CONFIG#id), a slug claim (ORG#, CONFIGSLUG#slug),
 * its versions under the config (CONFIG#id, VER#000001 ...), and the workspace's default pointer.
 */
import { BatchWriteCommand, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { ConflictError } from '../http/errors.ts';
import { Entity } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { prefixRange } from './prefix-range.ts';

export type ConfigStatus = 'active' | 'archived';

export interface SavedConfigRecord {
  id: string;
  slug: string;
  name: string;
  organisation_id: string;
  workspace_id: string;
  status: ConfigStatus;
  is_default: boolean;
  /** The current version. */
  version: number;
  version_id: string;
  config: Record<string, unknown>;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

export interface ConfigVersionRecord {
  id: string;
  config_id: string;
  version: number;
  config: Record<string, unknown>;
  name: string;
  created_at: string;
  created_by: string | null;
}

export const SavedConfig = new Entity<SavedConfigRecord>({
  name: 'Config',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `CONFIG#${r.id}` }),
  gsi1: (r) => ({ pk: `WS#${r.workspace_id}#CONFIGS`, sk: `${r.created_at}#${r.id}` }),
});

export const ConfigSlug = new Entity<{ organisation_id: string; slug: string; config_id: string }>({
  name: 'ConfigSlug',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `CONFIGSLUG#${r.slug}` }),
});

export const ConfigVersion = new Entity<ConfigVersionRecord>({
  name: 'ConfigVersion',
  key: (r) => ({ pk: `CONFIG#${r.config_id}`, sk: `VER#${String(r.version).padStart(6, '0')}` }),
});

const isCancelled = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'TransactionCanceledException' || err.name === 'ConditionalCheckFailedException');

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export class ConfigRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  /** The config, its slug claim and its first version, together; a taken slug is a conflict. */
  async create(rec: SavedConfigRecord, version: ConfigVersionRecord, previousDefault?: SavedConfigRecord): Promise<void> {
    const items: TransactItem[] = [
      this.#t.putIfAbsent(SavedConfig.toItem(rec)),
      this.#t.putIfAbsent(ConfigSlug.toItem({ organisation_id: rec.organisation_id, slug: rec.slug, config_id: rec.id })),
      this.#t.putIfAbsent(ConfigVersion.toItem(version)),
    ];
    if (previousDefault) items.push(this.#unsetDefault(previousDefault));
    try {
      await this.#t.doc.send(new TransactWriteCommand({ TransactItems: items }));
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError(`A config with slug "${rec.slug}" already exists`, { param: 'slug' });
      throw err;
    }
  }

  /**
   * Saves an update. When `version` is given it is the next version: the write is conditional on
   * the current version so that two concurrent updates cannot both claim it.
   */
  async update(rec: SavedConfigRecord, expectedVersion: number, version?: ConfigVersionRecord, previousDefault?: SavedConfigRecord): Promise<void> {
    const items: TransactItem[] = [
      {
        Put: {
          TableName: this.#t.tableName,
          Item: SavedConfig.toItem(rec),
          ConditionExpression: '#v = :v',
          ExpressionAttributeNames: { '#v': 'version' },
          ExpressionAttributeValues: { ':v': expectedVersion },
        },
      },
    ];
    if (version) items.push(this.#t.putIfAbsent(ConfigVersion.toItem(version)));
    if (previousDefault && previousDefault.id !== rec.id) items.push(this.#unsetDefault(previousDefault));
    try {
      await this.#t.doc.send(new TransactWriteCommand({ TransactItems: items }));
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError('The config was changed by another request; read it again and retry');
      throw err;
    }
  }

  #unsetDefault(prev: SavedConfigRecord): TransactItem {
    return {
      Update: {
        TableName: this.#t.tableName,
        Key: SavedConfig.key(prev),
        UpdateExpression: 'SET is_default = :f',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':f': false },
      },
    };
  }

  getById(orgId: string, id: string): Promise<SavedConfigRecord | undefined> {
    return this.#t.get(SavedConfig, { pk: `ORG#${orgId}`, sk: `CONFIG#${id}` }, true);
  }

  async resolve(orgId: string, idOrSlug: string): Promise<SavedConfigRecord | undefined> {
    const slug = await this.#t.get(ConfigSlug, { pk: `ORG#${orgId}`, sk: `CONFIGSLUG#${idOrSlug}` }, true);
    return this.getById(orgId, slug ? slug.config_id : idOrSlug);
  }

  listByWorkspace(workspaceId: string): Promise<SavedConfigRecord[]> {
    return this.#t.queryAll(SavedConfig, {
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': `WS#${workspaceId}#CONFIGS` },
    });
  }

  /** How many configs the workspace holds, up to `cap` (+1 when there are more): reads at most `cap + 1` items. */
  countInWorkspace(workspaceId: string, cap: number): Promise<number> {
    return this.#t.countOnIndex(`WS#${workspaceId}#CONFIGS`, cap);
  }

  listByOrganisation(orgId: string): Promise<SavedConfigRecord[]> {
    return this.#t
      .queryAll(SavedConfig, {
        ...prefixRange(`ORG#${orgId}`, 'CONFIG#'),
        ConsistentRead: true,
      })
      .then((all) => all.sort((a, b) => a.created_at.localeCompare(b.created_at)));
  }

  versions(configId: string): Promise<ConfigVersionRecord[]> {
    return this.#t.queryAll(ConfigVersion, {
      KeyConditionExpression: 'pk = :p',
      ExpressionAttributeValues: { ':p': `CONFIG#${configId}` },
      ScanIndexForward: false,
      ConsistentRead: true,
    });
  }

  /** Removes the config, its slug claim and every version. */
  async delete(rec: SavedConfigRecord): Promise<void> {
    const versions = await this.versions(rec.id);
    const keys = [SavedConfig.key(rec), ConfigSlug.key({ organisation_id: rec.organisation_id, slug: rec.slug, config_id: rec.id })];
    await this.#t.doc.send(new TransactWriteCommand({ TransactItems: keys.map((Key) => ({ Delete: { TableName: this.#t.tableName, Key } })) }));
    // Versions are history: deleted after the config, so a failure here leaves no live config behind.
    for (let i = 0; i < versions.length; i += 25) {
      const batch = versions.slice(i, i + 25).map((v) => ({ DeleteRequest: { Key: ConfigVersion.key(v) } }));
      await this.#t.doc.send(new BatchWriteCommand({ RequestItems: { [this.#t.tableName]: batch } }));
    }
  }
}
