/**
 * The single table, declared once as data. The CDK data stack and the local runtime (DynamoDB
 * Local) both build the table from this declaration, so they cannot drift apart.
 */

export type KeyType = 'S' | 'N' | 'B';

export interface KeyAttribute {
  readonly name: string;
  readonly type: KeyType;
}

export interface GlobalIndex {
  readonly name: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey: KeyAttribute;
}

export interface TableDeclaration {
  readonly partitionKey: KeyAttribute;
  readonly sortKey: KeyAttribute;
  readonly globalIndexes: readonly GlobalIndex[];
  /** Attribute holding the Unix-seconds expiry DynamoDB uses to delete items. */
  readonly ttlAttribute: string;
}

export const TABLE: TableDeclaration = {
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  globalIndexes: [{ name: 'gsi1', partitionKey: { name: 'gsi1pk', type: 'S' }, sortKey: { name: 'gsi1sk', type: 'S' } }],
  ttlAttribute: 'ttl',
};

/** Every key attribute the declaration names, each once (for CreateTable's AttributeDefinitions). */
export function keyAttributes(decl: TableDeclaration = TABLE): KeyAttribute[] {
  const all = [decl.partitionKey, decl.sortKey, ...decl.globalIndexes.flatMap((i) => [i.partitionKey, i.sortKey])];
  const seen = new Map<string, KeyAttribute>();
  for (const a of all) seen.set(a.name, a);
  return [...seen.values()];
}
