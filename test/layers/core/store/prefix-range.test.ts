/**
 * `prefixRange` against DynamoDB Local: the BETWEEN condition lists exactly the items `begins_with`
 * lists, for prefixes and keys in any script (characters above U+FFFF, where UTF-8 and UTF-16 orders
 * differ, included), at the boundaries: the prefix itself, the next prefix, the greatest key.
 */
import { BatchWriteCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { prefixRange, prefixUpperBound, SORT_KEY_MAX_BYTES } from '../../../../layers/core/src/store/prefix-range.ts';
import { createTestDeps } from '../../../support/deps.ts';

let deps: CoreDeps;
let doc: DynamoDBDocumentClient;
let table: string;
beforeAll(async () => {
  deps = await createTestDeps();
  doc = deps.repos.table.doc;
  table = deps.config.tableName;
});

async function put(pk: string, sks: readonly string[]): Promise<void> {
  const unique = [...new Set(sks)];
  for (let i = 0; i < unique.length; i += 25) {
    const batch = unique.slice(i, i + 25).map((sk) => ({ PutRequest: { Item: { pk, sk } } }));
    await doc.send(new BatchWriteCommand({ RequestItems: { [table]: batch } }));
  }
}

async function sortKeys(input: { KeyConditionExpression: string; ExpressionAttributeValues: Record<string, string> }): Promise<string[]> {
  const out: string[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(new QueryCommand({ TableName: table, ...input, ExclusiveStartKey: start, Limit: 7 }));
    for (const item of page.Items ?? []) out.push(String(item.sk));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

const beginsWith = (pk: string, prefix: string) =>
  sortKeys({ KeyConditionExpression: 'pk = :p AND begins_with(sk, :s)', ExpressionAttributeValues: { ':p': pk, ':s': prefix } });

/** The first key after all of the prefix's keys: its last code point below U+10FFFF moved up by one. */
function nextPrefix(prefix: string): string {
  const points = [...prefix];
  while (points.at(-1) === '\u{10FFFF}') points.pop();
  const last = (points.pop() as string).codePointAt(0) as number;
  const next = last === 0xd7ff ? 0xe000 : last + 1;
  return points.join('') + String.fromCodePoint(next);
}

describe('prefixRange', () => {
  it('gives the greatest key of the prefix: exactly 1024 UTF-8 bytes, whatever bytes the prefix ends on', () => {
    for (const prefix of ['WS#', 'é', 'WS#€', 'WS#😀', 'a'.repeat(1023), 'a'.repeat(1024)]) {
      const hi = prefixUpperBound(prefix);
      expect(hi.startsWith(prefix)).toBe(true);
      expect(Buffer.byteLength(hi, 'utf8')).toBe(SORT_KEY_MAX_BYTES);
    }
  });

  it('lists the same items as begins_with at every boundary, in any script', async () => {
    const prefixes = ['WS#', 'USER#é', 'K#€', 'K#\u{1D11E}', 'K#\uFFFF', 'K#\uD7FF', 'K#\u{10FFFF}'];
    const keys = prefixes.flatMap((p) => [
      p,
      p.slice(0, -1),
      `${p}a`,
      `${p}\u0000`,
      `${p}\u007F\u0080`,
      `${p}\uE000`,
      `${p}\uFFFF`,
      `${p}\u{10000}`,
      `${p}\u{10FFFF}`,
      `${p}\u{10FFFF}\u{10FFFF}z`,
      prefixUpperBound(p),
      nextPrefix(p),
      `${nextPrefix(p)}a`,
    ]);
    const pk = 'PREFIX#boundaries';
    await put(pk, keys);
    for (const prefix of prefixes) {
      const expected = await beginsWith(pk, prefix);
      expect(expected.length).toBeGreaterThan(5);
      expect(await sortKeys(prefixRange(pk, prefix)), prefix).toEqual(expected);
      expect(expected).toContain(prefixUpperBound(prefix));
      expect(expected).not.toContain(nextPrefix(prefix));
    }
  });

  it('lists the same items as begins_with for random Unicode prefixes and keys', async () => {
    const text = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 });
    const cases = fc.sample(fc.tuple(text, fc.array(text, { minLength: 1, maxLength: 12 })), { numRuns: 30, seed: 23 });
    for (const [n, [prefix, suffixes]] of cases.entries()) {
      const pk = `PREFIX#random#${n}`;
      const lower = prefix.slice(0, -1);
      await put(pk, [...suffixes.map((s) => prefix + s), ...suffixes.map((s) => lower + s), ...suffixes, prefix, nextPrefix(prefix)]);
      expect(await sortKeys(prefixRange(pk, prefix)), JSON.stringify(prefix)).toEqual(await beginsWith(pk, prefix));
    }
  });
});
