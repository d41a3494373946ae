/**
 * Query pagination, written once: DynamoDB answers a Query a page at a time (1 MB, or `Limit`
 * items) and names where the next page starts (`LastEvaluatedKey`). Every multi-page read of the
 * table goes through here.
 */
import { QueryCommand, type DynamoDBDocumentClient, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Item } from './entity.ts';

export interface QueryReach {
  /**
   * Items read at most over all pages: each page asks for what is left of it (its `Limit`) and
   * reading stops there, so a bounded read stays bounded whatever the partition holds.
   */
  max?: number | undefined;
  /**
   * Each page's `Limit`, asked again before each page: for a budget shared with reads running
   * beside this one, which may have spent part of it meanwhile.
   */
  pageLimit?: (() => number) | undefined;
}

/** The Limit of the next page; undefined for none (or the input's own). */
function nextLimit(reach: QueryReach, read: number): number | undefined {
  const left = reach.max === undefined ? undefined : reach.max - read;
  const page = reach.pageLimit?.();
  if (left === undefined) return page;
  return page === undefined ? left : Math.min(left, page);
}

/**
 * The pages of a Query, from `input.ExclusiveStartKey` (or the partition's start) to its last page,
 * or until `max` items were read. A caller that has what it needs stops iterating: no page is read
 * ahead.
 */
export async function* queryPages(doc: DynamoDBDocumentClient, input: QueryCommandInput, reach: QueryReach = {}): AsyncGenerator<Item[]> {
  let start = input.ExclusiveStartKey;
  let read = 0;
  do {
    const limit = nextLimit(reach, read);
    // DynamoDB refuses a Limit of 0: nothing left to read is no read.
    if (limit !== undefined && limit <= 0) return;
    const page = await doc.send(new QueryCommand({ ...input, ExclusiveStartKey: start, ...(limit !== undefined ? { Limit: limit } : {}) }));
    const items = (page.Items ?? []) as Item[];
    read += items.length;
    yield items;
    start = page.LastEvaluatedKey;
  } while (start);
}

/** Every item of a Query (up to `max`), following its pages. */
export async function queryAll(doc: DynamoDBDocumentClient, input: QueryCommandInput, reach: QueryReach = {}): Promise<Item[]> {
  const out: Item[] = [];
  for await (const items of queryPages(doc, input, reach)) out.push(...items);
  return out;
}
