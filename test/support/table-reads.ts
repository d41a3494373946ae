/**
 * For the tests of admin writes at scale: an organisation seeded with many keys quickly, an owner
 * principal to call the services as, and a count of the items a piece of work reads from the table.
 */
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import type { Principal } from '../../layers/core/src/kernel/principal.ts';
import { SCOPES } from '../../layers/core/src/policy/scopes.ts';
import { apiKeyIndexItems } from '../../layers/core/src/store/api-key-index.ts';
import { ApiKey, ApiKeyByHash, type ApiKeyRecord } from '../../layers/core/src/store/entities.ts';

type Item = Record<string, unknown>;

/** The items a command reads, as DynamoDB bills them: each key asked for, each item a query or scan evaluated. */
function itemsRead(name: string, input: Item, output: Item): number {
  switch (name) {
    case 'GetCommand':
      return 1;
    case 'BatchGetCommand':
      return Object.values(input.RequestItems as Record<string, { Keys: unknown[] }>).reduce((n, r) => n + r.Keys.length, 0);
    case 'TransactGetCommand':
      return (input.TransactItems as unknown[]).length;
    case 'QueryCommand':
    case 'ScanCommand':
      return Number(output.ScannedCount ?? output.Count ?? 0);
    default:
      return 0;
  }
}

export interface ReadCount {
  /** Items read since the count started. */
  items: number;
  /** Items read by command name (GetCommand, QueryCommand, ...). */
  byCommand: Record<string, number>;
}

/**
 * Counts the items `fn` reads through `doc` (every command: `send` is wrapped, so the single-item
 * commands store/db.ts sends on its lean path are seen too).
 */
export async function countReads<T>(doc: DynamoDBDocumentClient, fn: () => Promise<T>): Promise<{ result: T; reads: ReadCount }> {
  const reads: ReadCount = { items: 0, byCommand: {} };
  const send = doc.send;
  const counting = async (...args: unknown[]): Promise<unknown> => {
    const command = args[0] as { constructor: { name: string }; input: Item };
    const out = (await (send as (...a: unknown[]) => Promise<Item>).apply(doc, args)) ?? {};
    const n = itemsRead(command.constructor.name, command.input, out);
    reads.items += n;
    reads.byCommand[command.constructor.name] = (reads.byCommand[command.constructor.name] ?? 0) + n;
    return out;
  };
  doc.send = counting as DynamoDBDocumentClient['send'];
  try {
    return { result: await fn(), reads };
  } finally {
    doc.send = send;
  }
}

/** Stores keys as ApiKeyRepository.create would (record, hash copy, index entries), 25 items a request. */
export async function seedKeys(deps: CoreDeps, records: readonly ApiKeyRecord[], withIndex = true): Promise<void> {
  const items = records.flatMap((r) => [ApiKey.toItem(r), ApiKeyByHash.toItem(r), ...(withIndex ? apiKeyIndexItems(r) : [])]);
  const { doc, tableName } = deps.repos.table;
  for (let i = 0; i < items.length; i += 25) {
    let requests = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    while (requests.length) {
      const out = await doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: requests } }));
      requests = (out.UnprocessedItems?.[tableName] ?? []) as typeof requests;
    }
  }
}

/** The organisation owner, calling with an API key. */
export function ownerPrincipal(organisationId: string): Principal {
  return {
    kind: 'api-key',
    keyId: 'owner-key',
    organisationId,
    workspaceId: null,
    userId: null,
    email: null,
    keyType: 'organisation-service',
    role: 'owner',
    owner: true,
    scopes: new Set(SCOPES),
    defaults: null,
    limits: null,
  };
}
