/**
 * Bulk loading for `npm run seed:large`: writes items straight into DynamoDB Local's own store (the
 * SQLite file it keeps in its data directory), as DynamoDB Local itself would have written them, while
 * DynamoDB Local is stopped. Through the API, DynamoDB Local takes about 1,000 items a second here,
 * so the 22 million items would take six hours; this writes them in minutes, and every read
 * after it goes through DynamoDB Local as usual.
 *
 * The row format was read off DynamoDB Local 2.x (the jar in amplify-dynamodb-simulator): key columns
 * hold the UTF-8 bytes of the key values; `hashValue`/`rangeValue` are SHA-1 of a fixed salt and the
 * value's bytes, `hashRangeValue` SHA-1 of the salt and both; `ObjectJSON` is the item in DynamoDB
 * JSON with numbers normalised; `itemSize` is DynamoDB's item size. The SQLite columns of each index
 * come from the table's own metadata row. `ddb-local-store.test.ts` compares rows written here with
 * rows DynamoDB Local wrote for the same items, so a change of format fails a test, not a benchmark.
 */
import { hash } from 'node:crypto';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import path from 'node:path';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/** DynamoDB Local's hash salt (the bytes of "LocalDdb"). */
const SALT = Buffer.from('LocalDdb', 'latin1');
/** The file DynamoDB Local keeps its tables in when started with `-sharedDb`. */
export const SHARED_DB_FILE = 'shared-local-instance.db';

const sha1 = (...parts: Uint8Array[]): Buffer => hash('sha1', Buffer.concat([SALT, ...parts]), 'buffer');

interface Decimal {
  negative: boolean;
  /** Significant digits without leading or trailing zeros ('' for zero). */
  digits: string;
  /** The value is digits × 10^exponent. */
  exponent: number;
}

/** Whole numbers written plainly (nearly every number stored): no regular expression needed. */
function parseWhole(text: string): Decimal | undefined {
  const n = text.length;
  if (n === 0 || n > 40 || (text.charCodeAt(0) === 48 && n > 1)) return undefined;
  let zeros = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
    zeros = c === 48 ? zeros + 1 : 0;
  }
  if (text === '0') return { negative: false, digits: '', exponent: 0 };
  return { negative: false, digits: zeros ? text.slice(0, n - zeros) : text, exponent: zeros };
}

function parseNumber(text: string): Decimal {
  const whole = parseWhole(text);
  if (whole) return whole;
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim());
  if (!m || (m[2] === '' && !m[3])) throw new Error(`not a DynamoDB number: ${text}`);
  const frac = m[3] ?? '';
  let digits = (m[2] + frac).replace(/^0+/, '');
  let exponent = Number(m[4] ?? 0) - frac.length;
  const trimmed = digits.replace(/0+$/, '');
  exponent += digits.length - trimmed.length;
  digits = trimmed;
  return { negative: m[1] === '-' && digits !== '', digits, exponent: digits ? exponent : 0 };
}

/** The number as DynamoDB Local stores it: plain notation, no leading or trailing zeros. */
export function normaliseNumber(text: string): string {
  if (parseWhole(text)) return text;
  const { negative, digits, exponent } = parseNumber(text);
  if (!digits) return '0';
  const sign = negative ? '-' : '';
  if (exponent >= 0) return sign + digits + '0'.repeat(exponent);
  const point = digits.length + exponent;
  return point > 0 ? `${sign}${digits.slice(0, point)}.${digits.slice(point)}` : `${sign}0.${'0'.repeat(-point)}${digits}`;
}

/** DynamoDB's size of a number: one byte per two significant digits (paired around the point), one more, and one for a minus. */
export function numberSize(text: string): number {
  const { negative, digits, exponent } = parseNumber(text);
  if (!digits) return 1;
  const pairs = Math.floor((exponent + digits.length - 1) / 2) - Math.floor(exponent / 2) + 1;
  return pairs + 1 + (negative ? 1 : 0);
}

const utf8Length = (s: string) => Buffer.byteLength(s, 'utf8');

function valueSize(v: AttributeValue): number {
  if (v.S !== undefined) return utf8Length(v.S);
  if (v.N !== undefined) return numberSize(v.N);
  if (v.B !== undefined) return v.B.byteLength;
  if (v.SS) return v.SS.reduce((n, s) => n + utf8Length(s), 0);
  if (v.NS) return v.NS.reduce((n, s) => n + numberSize(s), 0);
  if (v.BS) return v.BS.reduce((n, b) => n + b.byteLength, 0);
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.L) return v.L.reduce((n, x) => n + valueSize(x), 0) + v.L.length + 3;
  if (v.M) return mapSize(v.M, false) + 3;
  throw new Error('unknown attribute value type');
}

/** Top-level attributes cost their name and value; nested ones one byte more each. */
function mapSize(m: Record<string, AttributeValue>, topLevel: boolean): number {
  let n = 0;
  for (const [name, v] of Object.entries(m)) n += utf8Length(name) + valueSize(v) + (topLevel ? 0 : 1);
  return n;
}

const compareNumbers = (a: string, b: string): number => {
  const d = Number(a) - Number(b);
  return d < 0 ? -1 : d > 0 ? 1 : 0;
};

/**
 * DynamoDB JSON as DynamoDB Local keeps it: binary as base64, sets sorted, top-level numbers and
 * number sets normalised (numbers inside lists and maps are kept as written, as DynamoDB Local does).
 */
function toStoredJson(v: AttributeValue, topLevel: boolean): unknown {
  if (v.N !== undefined) return { N: topLevel ? normaliseNumber(v.N) : v.N };
  if (v.NS) return { NS: v.NS.map(normaliseNumber).sort(compareNumbers) };
  if (v.SS) return { SS: [...v.SS].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))) };
  if (v.B !== undefined) return { B: Buffer.from(v.B).toString('base64') };
  if (v.BS) return { BS: [...v.BS].sort((a, b) => Buffer.compare(a, b)).map((b) => Buffer.from(b).toString('base64')) };
  if (v.L) return { L: v.L.map((x) => toStoredJson(x, false)) };
  if (v.M) return { M: Object.fromEntries(Object.entries(v.M).map(([k, x]) => [k, toStoredJson(x, false)])) };
  return v;
}

/** Which SQLite column holds which key attribute, per index ('' is the table's own key). */
export type IndexColumns = Record<string, { attribute: string; type: string; column: string }[]>;

export interface StoredRow {
  hashKey: Buffer;
  rangeKey: Buffer;
  hashValue: Buffer;
  rangeValue: Buffer;
  itemSize: number;
  ObjectJSON: Buffer;
  hashRangeValue: Buffer;
  [indexColumn: string]: Buffer | number | null;
}

function keyBytes(item: Record<string, AttributeValue>, attribute: string, type: string): Buffer | undefined {
  const v = item[attribute];
  if (v === undefined) return undefined;
  if (type !== 'S' || v.S === undefined) throw new Error(`key attribute ${attribute}: only string keys are supported by the bulk loader`);
  return Buffer.from(v.S, 'utf8');
}

/** The row DynamoDB Local would store for `plain` (a JavaScript item, marshalled as the table's document client does). */
export function rowOf(plain: Record<string, unknown>, columns: IndexColumns): StoredRow {
  const item = marshall(plain, { removeUndefinedValues: true, convertClassInstanceToMap: false });
  const [hash, range] = columns[''] ?? [];
  if (!hash || !range) throw new Error('the table has no hash and range key');
  const hashKey = keyBytes(item, hash.attribute, hash.type);
  const rangeKey = keyBytes(item, range.attribute, range.type);
  if (!hashKey || !rangeKey) throw new Error(`item without its key: ${JSON.stringify(plain).slice(0, 200)}`);
  const hashValue = sha1(hashKey);
  const rangeValue = sha1(rangeKey);
  const row: StoredRow = {
    hashKey,
    rangeKey,
    hashValue,
    rangeValue,
    itemSize: mapSize(item, true),
    ObjectJSON: Buffer.from(JSON.stringify(Object.fromEntries(Object.entries(item).map(([k, v]) => [k, toStoredJson(v, true)])))),
    hashRangeValue: sha1(hashValue, rangeValue),
  };
  for (const [index, keys] of Object.entries(columns)) {
    if (index === '') continue;
    for (const k of keys) row[k.column] = keyBytes(item, k.attribute, k.type) ?? null;
  }
  return row;
}

/**
 * A table in a stopped DynamoDB Local's data directory, open for bulk writes. `write` takes items in
 * any number and order; `close` rebuilds the secondary indexes (dropped while loading: building an
 * index once is much faster than keeping it through millions of inserts) and closes the file.
 */
export class BulkTable {
  readonly #db: DatabaseSync;
  readonly #columns: IndexColumns;
  readonly #insert: StatementSync;
  readonly #indexSql: string[];
  readonly #order: string[];

  constructor(dataDir: string, table: string) {
    this.#db = new DatabaseSync(path.join(dataDir, SHARED_DB_FILE));
    const meta = this.#db.prepare('SELECT TableInfo FROM dm WHERE TableName = ?').get(table) as { TableInfo: Uint8Array } | undefined;
    if (!meta) throw new Error(`table ${table} is not in ${dataDir}: create it through DynamoDB Local first`);
    const info = JSON.parse(Buffer.from(meta.TableInfo).toString('utf8')) as {
      SQLiteIndex: Record<string, { DynamoDBAttribute: { AttributeName: string; AttributeType: string }; SQLiteColumnName: string }[]>;
    };
    this.#columns = Object.fromEntries(
      Object.entries(info.SQLiteIndex).map(([name, keys]) => [
        name,
        keys.map((k) => ({ attribute: k.DynamoDBAttribute.AttributeName, type: k.DynamoDBAttribute.AttributeType, column: k.SQLiteColumnName })),
      ]),
    );
    const indexColumns = Object.entries(this.#columns)
      .filter(([n]) => n !== '')
      .flatMap(([, ks]) => ks.map((k) => k.column));
    this.#order = ['hashKey', 'rangeKey', 'hashValue', 'rangeValue', 'itemSize', 'ObjectJSON', 'hashRangeValue', ...indexColumns];
    const quoted = `"${table.replaceAll('"', '""')}"`;
    this.#insert = this.#db.prepare(`INSERT OR REPLACE INTO ${quoted} (${this.#order.join(', ')}) VALUES (${this.#order.map(() => '?').join(', ')})`);
    // Loading only: the file is rewritten from scratch if the process dies, so durability is not needed here.
    this.#db.exec('PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY; PRAGMA cache_size = -1000000;');
    const indexes = this.#db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL").all(table) as {
      name: string;
      sql: string;
    }[];
    this.#indexSql = indexes.map((i) => i.sql);
    for (const i of indexes) this.#db.exec(`DROP INDEX "${i.name.replaceAll('"', '""')}"`);
  }

  get columns(): IndexColumns {
    return this.#columns;
  }

  /** Writes the items in one transaction. */
  write(items: readonly Record<string, unknown>[]): void {
    this.#db.exec('BEGIN');
    try {
      for (const item of items) {
        const row = rowOf(item, this.#columns);
        this.#insert.run(...this.#order.map((c) => row[c] ?? null));
      }
      this.#db.exec('COMMIT');
    } catch (err) {
      this.#db.exec('ROLLBACK');
      throw err;
    }
  }

  close(): void {
    for (const sql of this.#indexSql) this.#db.exec(sql);
    this.#db.close();
  }
}
