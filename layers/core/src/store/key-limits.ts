/**
 * DynamoDB's key limits, held before a call is sent: a partition key value of at most 2,048 bytes and
 * a sort key value of at most 1,024 (also in the index keys). DynamoDB answers a longer one with a
 * ValidationException, which reaches no route as anything but a 500; here, for every command of the
 * document client (repositories and the few callers outside store/ alike):
 * - a read with a key no item can have finds nothing: a Get answers no item, a Query no items, a
 *   batch get leaves that key out (so a lookup by an over-long id is a plain 404);
 * - a write with one is refused with `KeyTooLongError`, a 400, before anything is written.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ValidationError } from '../http/errors.ts';
import { TABLE } from './table.ts';

export const MAX_PARTITION_KEY_BYTES = 2048;
export const MAX_SORT_KEY_BYTES = 1024;

const PARTITION_KEYS = new Set([TABLE.partitionKey.name, ...TABLE.globalIndexes.map((i) => i.partitionKey.name)]);
const SORT_KEYS = new Set([TABLE.sortKey.name, ...TABLE.globalIndexes.map((i) => i.sortKey.name)]);

/** A write whose key DynamoDB would refuse: a 400 naming no field (the route bounds its fields; this is the floor). */
export class KeyTooLongError extends ValidationError {
  constructor(attribute: string, limit: number) {
    super([{ path: '', message: `an id or name in this request is too long to be stored (its key ${attribute} would exceed ${limit} bytes)` }], {
      param: null,
    });
  }
}

type Item = Record<string, unknown>;
const isRecord = (v: unknown): v is Item => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Bytes of a key value, in the document form (a string) or the marshalled one ({S}, {B}). */
function bytesOf(v: unknown): number {
  if (typeof v === 'string') return Buffer.byteLength(v, 'utf8');
  if (v instanceof Uint8Array) return v.byteLength;
  if (isRecord(v)) return bytesOf(v.S ?? v.B);
  return 0;
}

/** The first key attribute of `item` over its limit, if any. */
function overLimit(item: unknown): { attribute: string; limit: number } | undefined {
  if (!isRecord(item)) return undefined;
  for (const [name, value] of Object.entries(item)) {
    const limit = PARTITION_KEYS.has(name) ? MAX_PARTITION_KEY_BYTES : SORT_KEYS.has(name) ? MAX_SORT_KEY_BYTES : undefined;
    if (limit !== undefined && bytesOf(value) > limit) return { attribute: name, limit };
  }
  return undefined;
}

/** A Query's key condition names values of at most 2,048 bytes (partition) or 1,024 (sort); ours use short partition keys. */
function impossibleQuery(input: Item): boolean {
  const condition = typeof input.KeyConditionExpression === 'string' ? input.KeyConditionExpression : '';
  const values = isRecord(input.ExpressionAttributeValues) ? input.ExpressionAttributeValues : {};
  return Object.entries(values).some(([name, value]) => condition.includes(name) && bytesOf(value) > MAX_SORT_KEY_BYTES);
}

type Outcome = { kind: 'send'; input: Item } | { kind: 'answer'; output: Item };

function writeKeys(input: Item): unknown[] {
  const keys: unknown[] = [input.Key, input.Item];
  for (const t of Array.isArray(input.TransactItems) ? input.TransactItems : []) {
    if (!isRecord(t)) continue;
    for (const op of Object.values(t)) if (isRecord(op)) keys.push(op.Key, op.Item);
  }
  for (const requests of isRecord(input.RequestItems) ? Object.values(input.RequestItems) : []) {
    for (const r of Array.isArray(requests) ? requests : []) {
      if (isRecord(r)) keys.push(isRecord(r.PutRequest) ? r.PutRequest.Item : undefined, isRecord(r.DeleteRequest) ? r.DeleteRequest.Key : undefined);
    }
  }
  return keys;
}

/** What to do with one command: send it (maybe with impossible keys left out), answer it empty, or refuse it. */
export function checkKeys(command: string, input: Item): Outcome {
  if (command === 'GetCommand' || command === 'GetItemCommand') return overLimit(input.Key) ? { kind: 'answer', output: {} } : { kind: 'send', input };
  if (command === 'QueryCommand')
    return impossibleQuery(input) ? { kind: 'answer', output: { Items: [], Count: 0, ScannedCount: 0 } } : { kind: 'send', input };
  if ((command === 'BatchGetCommand' || command === 'BatchGetItemCommand') && isRecord(input.RequestItems)) {
    const RequestItems: Item = {};
    for (const [table, req] of Object.entries(input.RequestItems)) {
      if (!isRecord(req) || !Array.isArray(req.Keys)) continue;
      const Keys = req.Keys.filter((k) => !overLimit(k));
      if (Keys.length > 0) RequestItems[table] = { ...req, Keys };
    }
    return Object.keys(RequestItems).length === 0
      ? { kind: 'answer', output: { Responses: {}, UnprocessedKeys: {} } }
      : { kind: 'send', input: { ...input, RequestItems } };
  }
  for (const key of writeKeys(input)) {
    const over = overLimit(key);
    if (over) throw new KeyTooLongError(over.attribute, over.limit);
  }
  return { kind: 'send', input };
}

/** Holds every command of `client` to the key limits (checkKeys) before it is sent. */
export function guardKeyLimits(client: DynamoDBDocumentClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const outcome = checkKeys(String(context.commandName ?? ''), args.input as Item);
      if (outcome.kind === 'answer') return { output: { $metadata: {}, ...outcome.output } as never, response: {} };
      return next({ ...args, input: outcome.input });
    },
    { step: 'initialize', name: 'gantryKeyLimits', priority: 'high' },
  );
}
