/**
 * DynamoDB requests and their capacity units, counted by wrapping a document client's `send`: item
 * sizes by DynamoDB's rules (docs: "Item sizes and formats"), write units 1 per KB of item (2 in a
 * transaction), read units 0.5 per 4 KB eventually consistent, 1 strongly. An UpdateItem is billed by
 * the larger of the item before and after; when it returns no attributes its size is unknown here
 * and its key is kept, so the caller can read the item afterwards (`resolveUpdates`).
 */

export interface DynamoTally {
  /** Items written (a BatchWriteItem of 24 puts is 24) and their write units. */
  writes: number;
  writeUnits: number;
  /** Items read and their read units. */
  reads: number;
  readUnits: number;
  /** Updates whose item size is unknown (counted at 1 unit so far), by table and key. */
  unsizedUpdates: { table: string; key: Record<string, unknown> }[];
}

export const newTally = (): DynamoTally => ({ writes: 0, writeUnits: 0, reads: 0, readUnits: 0, unsizedUpdates: [] });

/** Bytes of a number as DynamoDB stores it: about one byte per two significant digits, plus one. */
const numberBytes = (n: number): number => {
  const digits = String(Math.abs(n)).replace(/e.*$/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
};

/** The size of one attribute value (native JavaScript, as the document client takes it). */
export function valueBytes(v: unknown): number {
  if (v === null || v === undefined || typeof v === 'boolean') return 1;
  if (typeof v === 'string') return Buffer.byteLength(v, 'utf8');
  if (typeof v === 'number' || typeof v === 'bigint') return numberBytes(Number(v));
  if (v instanceof Uint8Array) return v.byteLength;
  if (v instanceof Set) return [...v].reduce((s: number, x) => s + valueBytes(x), 0);
  // A list or map: 3 bytes, plus 1 per element, plus the elements (and a map's names).
  if (Array.isArray(v)) return 3 + v.reduce((s: number, x) => s + 1 + valueBytes(x), 0);
  if (typeof v === 'object') return 3 + Object.entries(v).reduce((s, [k, x]) => s + 1 + Buffer.byteLength(k, 'utf8') + valueBytes(x), 0);
  return 1;
}

/** An item's size: its attribute names and values. */
export const itemBytes = (item: Record<string, unknown>): number =>
  Object.entries(item).reduce((s, [k, v]) => s + Buffer.byteLength(k, 'utf8') + valueBytes(v), 0);

export const writeUnits = (item: Record<string, unknown> | undefined): number => (item ? Math.max(1, Math.ceil(itemBytes(item) / 1024)) : 1);
const readUnits = (bytes: number, consistent: boolean): number => Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);

type Input = Record<string, unknown>;
type Output = Record<string, unknown> | undefined;

/** `UpdateItemCommand`, `UpdateCommand` -> `Update`; `TransactWriteItemsCommand` -> `TransactWrite`. */
export const operationOf = (commandName: string): string => commandName.replace(/Command$/, '').replace(/Items?$/, '');

/** Adds one request (its input, and its output when it has come) to the tally. */
export function tallyRequest(t: DynamoTally, commandName: string, input: Input, output: Output): void {
  const op = operationOf(commandName);
  const consistent = input.ConsistentRead === true;
  if (op === 'Put') {
    t.writes++;
    t.writeUnits += writeUnits(input.Item as Input);
  } else if (op === 'Update' || op === 'Delete') {
    t.writes++;
    const attrs = output?.Attributes as Input | undefined;
    if (attrs) t.writeUnits += writeUnits(attrs);
    else {
      t.writeUnits += 1;
      if (op === 'Update') t.unsizedUpdates.push({ table: String(input.TableName), key: input.Key as Input });
    }
  } else if (op === 'BatchWrite') {
    for (const list of Object.values((input.RequestItems ?? {}) as Record<string, { PutRequest?: { Item: Input } }[]>)) {
      for (const r of list) {
        t.writes++;
        t.writeUnits += writeUnits(r.PutRequest?.Item);
      }
    }
  } else if (op === 'TransactWrite') {
    for (const x of (input.TransactItems ?? []) as Record<string, { Item?: Input }>[]) {
      t.writes++;
      t.writeUnits += 2 * writeUnits(x.Put?.Item);
    }
  } else if (op === 'Get') {
    t.reads++;
    t.readUnits += readUnits(output?.Item ? itemBytes(output.Item as Input) : 1, consistent);
  } else if (op === 'BatchGet') {
    for (const items of Object.values((output?.Responses ?? {}) as Record<string, Input[]>)) {
      for (const item of items) {
        t.reads++;
        t.readUnits += readUnits(itemBytes(item), false);
      }
    }
  } else if (op === 'Query' || op === 'Scan') {
    const items = (output?.Items ?? []) as Input[];
    t.reads += items.length;
    t.readUnits += readUnits(
      items.reduce((s, i) => s + itemBytes(i), 0),
      consistent,
    );
  }
}

type Send = (command: unknown, ...rest: unknown[]) => Promise<unknown>;
interface Sendable {
  send: Send;
}

/** Commands being counted: a `send` wrapping another counted `send` (an SDK fallback) counts each command once. */
const inFlight = new WeakSet<object>();

/** `send` counting each command it sends into whichever tally `current()` answers (none: not counted). */
function counting(send: Send, current: () => DynamoTally | undefined): Send {
  return async function (this: unknown, command: unknown, ...rest: unknown[]) {
    const c = command as { constructor: { name: string }; input?: Input };
    if (typeof command !== 'object' || command === null || inFlight.has(command)) return send.call(this, command, ...rest);
    inFlight.add(command);
    try {
      const out = (await send.call(this, command, ...rest)) as Output;
      const tally = current();
      if (tally) tallyRequest(tally, c.constructor.name, c.input ?? {}, out);
      return out;
    } finally {
      inFlight.delete(command);
    }
  };
}

/** Counts every request sent through `target.send` (a client instance) from now on. Answers a function that undoes it. */
export function countSends(target: Sendable, current: () => DynamoTally | undefined): () => void {
  const send = target.send;
  target.send = counting(send, current);
  return () => void (target.send = send);
}

/**
 * Counts the requests of every client `cls.from` makes from now on, whatever `send` is set on it
 * later (store/db.ts may route some commands through a lean client by replacing `send`): the
 * outermost `send` is always the counting one.
 */
export function countClientsOf(cls: { from: (...args: never[]) => unknown }, current: () => DynamoTally | undefined): void {
  const from = cls.from.bind(cls) as (...args: unknown[]) => Sendable;
  (cls as { from: (...args: unknown[]) => Sendable }).from = (...args: unknown[]) => {
    const client = from(...args);
    let inner: Send = client.send;
    let outer = counting(inner, current);
    Object.defineProperty(client, 'send', {
      configurable: true,
      get: () => outer,
      set: (v: Send) => {
        inner = v;
        outer = counting(inner, current);
      },
    });
    return client;
  };
}

/** Re-prices the updates of unknown size from the items as they are now (read afterwards, outside any measurement). */
export async function resolveUpdates(t: DynamoTally, sizeOf: (table: string, key: Record<string, unknown>) => Promise<number | undefined>): Promise<void> {
  const seen = new Map<string, number>();
  for (const u of t.unsizedUpdates) {
    const id = `${u.table}|${JSON.stringify(u.key)}`;
    let bytes = seen.get(id);
    if (bytes === undefined) {
      bytes = (await sizeOf(u.table, u.key)) ?? 0;
      seen.set(id, bytes);
    }
    t.writeUnits += Math.max(1, Math.ceil(bytes / 1024)) - 1;
  }
  t.unsizedUpdates = [];
}
