/**
 * The document client's single-item commands (GetCommand, PutCommand, UpdateCommand) sent through
 * the lean signed client (ports/aws/signed-json.ts) instead of the SDK's middleware stack: they are
 * what a warm gateway request sends (the limit counter's conditional UpdateItem on every request
 * with an exact policy), and the SDK spends about 1 ms of CPU on each. Everything else (queries,
 * batches, transactions, deletes, a command sent with options) goes to the SDK as before.
 *
 * Why a wrapper of `send` and not a new method: the repositories keep their shape and their catch
 * sites. The document client is the same object, with `send` looking at the command first; what
 * it answers and throws is what the SDK's would be:
 * - input marshalled with `marshall` and the client's own `marshallOptions` (removeUndefinedValues,
 *   convertClassInstanceToMap: false), output `Item`/`Attributes` unmarshalled, binary as base64 on
 *   the wire and Uint8Array in JS, `$metadata` on answers and errors;
 * - errors named by DynamoDB (`ConditionalCheckFailedException` with the wire-form `Item` when
 *   ReturnValuesOnConditionCheckFailure is set), timeouts and retries as the SDK client's (DB_TIMEOUTS);
 * - the key limits of key-limits.ts held before sending, as its middleware holds them.
 *
 * SDK middleware never sees these commands: counters that sit on `middlewareStack` use
 * `observeSignedCommands` too (test/bench/ddb-counter.ts and lambda-handler.ts).
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall, unmarshall, type marshallOptions, type unmarshallOptions } from '@aws-sdk/util-dynamodb';
import type { SignedJsonClient } from '../ports/aws/signed-json.ts';
import { checkKeys } from './key-limits.ts';

type Item = Record<string, unknown>;

/** One HTTP attempt of a command sent on the signed path, named as the SDK's middleware names it. */
export interface SignedCommand {
  /** `GetItemCommand`, `PutItemCommand` or `UpdateItemCommand` (the middleware's `context.commandName`). */
  commandName: string;
  /** The document-form input (as an `initialize` middleware sees it). */
  input: Item;
  /** 1 for the first attempt; counters of commands (not of requests) count attempt 1 only. */
  attempt: number;
}

interface Route {
  operation: 'GetItem' | 'PutItem' | 'UpdateItem';
  commandName: string;
  /** Members holding a map of attribute values (document form in, wire form out). */
  marshalled: readonly string[];
  /** Members the SDK's command would marshal but this path does not (legacy parameters): such a command goes to the SDK. */
  legacy: readonly string[];
}

const GET: Route = { operation: 'GetItem', commandName: 'GetItemCommand', marshalled: ['Key'], legacy: [] };
const PUT: Route = { operation: 'PutItem', commandName: 'PutItemCommand', marshalled: ['Item', 'ExpressionAttributeValues'], legacy: ['Expected'] };
const UPDATE: Route = {
  operation: 'UpdateItem',
  commandName: 'UpdateItemCommand',
  marshalled: ['Key', 'ExpressionAttributeValues'],
  legacy: ['Expected', 'AttributeUpdates'],
};

const routeOf = (command: unknown): Route | undefined =>
  command instanceof UpdateCommand ? UPDATE : command instanceof GetCommand ? GET : command instanceof PutCommand ? PUT : undefined;

interface Options {
  marshall: marshallOptions;
  unmarshall: unmarshallOptions;
}

const observers = new WeakMap<DynamoDBDocumentClient, ((c: SignedCommand) => void)[]>();

/**
 * Sends `doc`'s Get/Put/Update commands through `client`; answers `doc` itself. The client must
 * speak DynamoDB's JSON protocol to the same table endpoint, with the same timeouts and attempts.
 */
export function sendSingleItemsSigned(doc: DynamoDBDocumentClient, client: SignedJsonClient): DynamoDBDocumentClient {
  const sdkSend = doc.send.bind(doc) as (...args: unknown[]) => Promise<unknown>;
  // The document client's own options, as its marshalling middleware completes them.
  const translate = doc.config.translateConfig;
  const options: Options = {
    marshall: { ...translate?.marshallOptions, convertTopLevelContainer: translate?.marshallOptions?.convertTopLevelContainer ?? true },
    unmarshall: { ...translate?.unmarshallOptions, convertWithoutMapWrapper: false },
  };
  const watching: ((c: SignedCommand) => void)[] = [];
  observers.set(doc, watching);
  const send = (...args: unknown[]): Promise<unknown> => {
    const [command] = args;
    const route = args.length === 1 ? routeOf(command) : undefined;
    const input = (command as { input?: Item } | undefined)?.input;
    if (!route || !input || route.legacy.some((k) => input[k] !== undefined)) return sdkSend(...args);
    return sendSigned(client, route, input, options, watching);
  };
  doc.send = send as DynamoDBDocumentClient['send'];
  const destroy = doc.destroy.bind(doc);
  doc.destroy = () => {
    client.destroy();
    destroy();
  };
  return doc;
}

/** Calls `fn` for every HTTP attempt of a command on `doc`'s signed path; false when `doc` has none. */
export function observeSignedCommands(doc: DynamoDBDocumentClient, fn: (c: SignedCommand) => void): boolean {
  const list = observers.get(doc);
  list?.push(fn);
  return list !== undefined;
}

async function sendSigned(
  client: SignedJsonClient,
  route: Route,
  input: Item,
  options: Options,
  watching: readonly ((c: SignedCommand) => void)[],
): Promise<Item> {
  const outcome = checkKeys(route.commandName, input);
  if (outcome.kind === 'answer') return { $metadata: {}, ...outcome.output };
  const wire: Item = { ...input };
  for (const member of route.marshalled) {
    const value = input[member];
    if (value === undefined) continue;
    wire[member] = marshalMap(value as Item, options.marshall);
  }
  const onAttempt = watching.length > 0 ? (attempt: number) => notify(watching, { commandName: route.commandName, input, attempt }) : undefined;
  let out: Item;
  try {
    out = await client.call<Item>(route.operation, wire, onAttempt);
  } catch (err) {
    // The SDK's error carries the item in wire form, binary decoded (store/limits.ts reads it so).
    const e = err as { Item?: unknown };
    if (isMap(e.Item)) e.Item = fromWireMap(e.Item);
    throw err;
  }
  if (isMap(out.Item)) out.Item = unmarshall(fromWireMap(out.Item), options.unmarshall);
  if (isMap(out.Attributes)) out.Attributes = unmarshall(fromWireMap(out.Attributes), options.unmarshall);
  const metrics = out.ItemCollectionMetrics as { ItemCollectionKey?: unknown } | undefined;
  if (isMap(metrics?.ItemCollectionKey)) metrics.ItemCollectionKey = unmarshall(fromWireMap(metrics.ItemCollectionKey), options.unmarshall);
  return out;
}

/** Each value marshalled on its own, undefined ones and functions left out: lib-dynamodb's marshallInput. */
function marshalMap(map: Item, options: marshallOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(map)) {
    if (v === undefined || typeof v === 'function') continue;
    out[k] = toWire(marshall(v as never, options) as AttributeValue);
  }
  return out;
}

function notify(watching: readonly ((c: SignedCommand) => void)[], c: SignedCommand): void {
  for (const fn of watching) fn(c);
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const base64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
const bytes = (s: string): Uint8Array => {
  const b = Buffer.from(s, 'base64');
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
};

/** Attribute values as JSON carries them: binary (B, BS) as base64; the rest is JSON already. */
function toWire(av: AttributeValue): unknown {
  if (av.B !== undefined) return { B: base64(av.B) };
  if (av.BS !== undefined) return { BS: av.BS.map(base64) };
  if (av.L !== undefined) return { L: av.L.map(toWire) };
  if (av.M !== undefined) return { M: toWireMap(av.M) };
  return av;
}

function toWireMap(map: Record<string, AttributeValue>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in map) out[k] = toWire(map[k] as AttributeValue);
  return out;
}

/** The answer's attribute values with binary decoded, as the SDK's deserializer gives them. */
function fromWire(v: unknown): AttributeValue {
  const av = v as Record<string, unknown>;
  if (typeof av.B === 'string') return { B: bytes(av.B) };
  if (Array.isArray(av.BS)) return { BS: av.BS.map((s) => bytes(String(s))) };
  if (Array.isArray(av.L)) return { L: av.L.map(fromWire) };
  if (isMap(av.M)) return { M: fromWireMap(av.M) };
  return av as unknown as AttributeValue;
}

function fromWireMap(map: Record<string, unknown>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const k in map) out[k] = fromWire(map[k]);
  return out;
}
