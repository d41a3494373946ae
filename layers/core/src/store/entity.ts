/**
 * Entities are data: a name, how a record maps to its primary key, and optionally to the generic
 * GSI. Repositories turn records into items and back through these declarations only. As in
 * ElectroDB, the key is declared over the attributes it is made of (`K`, the whole record unless
 * given), so a read by key passes those attributes and never spells the key itself.
 */
import { TABLE } from './table.ts';

export interface ItemKey {
  pk: string;
  sk: string;
}

export interface EntityDeclaration<R extends object, K extends keyof R = keyof R> {
  readonly name: string;
  readonly key: (record: Pick<R, K>) => ItemKey;
  readonly gsi1?: (record: R) => ItemKey;
  /** Unix seconds after which DynamoDB may delete the item. */
  readonly ttl?: (record: R) => number | undefined;
}

export type Item = Record<string, unknown>;

const RESERVED = new Set([
  TABLE.partitionKey.name,
  TABLE.sortKey.name,
  ...TABLE.globalIndexes.flatMap((i) => [i.partitionKey.name, i.sortKey.name]),
  TABLE.ttlAttribute,
  '_type',
]);

export class Entity<R extends object, K extends keyof R = keyof R> {
  readonly decl: EntityDeclaration<R, K>;
  constructor(decl: EntityDeclaration<R, K>) {
    this.decl = decl;
  }

  key(record: Pick<R, K>): ItemKey {
    return this.decl.key(record);
  }

  toItem(record: R): Item {
    const item: Item = { ...record, ...this.decl.key(record), _type: this.decl.name };
    if (this.decl.gsi1) {
      const g = this.decl.gsi1(record);
      item.gsi1pk = g.pk;
      item.gsi1sk = g.sk;
    }
    const ttl = this.decl.ttl?.(record);
    if (ttl !== undefined) item[TABLE.ttlAttribute] = ttl;
    return item;
  }

  fromItem(item: Item): R {
    const out: Item = {};
    for (const [k, v] of Object.entries(item)) if (!RESERVED.has(k)) out[k] = v;
    return out as R;
  }
}
