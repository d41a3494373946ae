/**
 * The key condition for "the sort keys of a partition that start with a prefix", as
 * `sk BETWEEN :lo AND :hi` instead of `begins_with(sk, :s)`. Both select the same items, but
 * DynamoDB Local answers `begins_with` by walking the whole partition, so a list of five workspaces
 * in an organisation with a million API keys read every key; BETWEEN is a range seek.
 *
 * DynamoDB orders strings by their UTF-8 bytes, and a sort key holds at most 1024 bytes. The upper
 * bound is the prefix followed by the greatest UTF-8 bytes that still fit in 1024: every sort key
 * starting with the prefix is at most that (it is itself such a key), and every string at or above
 * the prefix that does not start with it is above it. An exclusive "next prefix" bound would not
 * do: BETWEEN includes its bound, and an item whose key is exactly that next prefix would be listed.
 */

/** The longest sort key DynamoDB accepts, in UTF-8 bytes. */
export const SORT_KEY_MAX_BYTES = 1024;

// The greatest code point of each UTF-8 length: its bytes are the largest that length can hold.
const GREATEST_OF_LENGTH = ['', '\u007f', '\u07ff', '\uffff', '\u{10ffff}'] as const;

/** The greatest valid sort key that starts with `prefix` (the prefix itself if it fills the key). */
export function prefixUpperBound(prefix: string): string {
  let room = SORT_KEY_MAX_BYTES - Buffer.byteLength(prefix, 'utf8');
  if (room <= 0) return prefix;
  const parts = [prefix, GREATEST_OF_LENGTH[4].repeat(Math.floor(room / 4))];
  room %= 4;
  if (room) parts.push(GREATEST_OF_LENGTH[room] as string);
  return parts.join('');
}

export interface PrefixQuery {
  KeyConditionExpression: string;
  ExpressionAttributeValues: Record<string, string>;
}

/**
 * The Query fields for the items of partition `pk` whose sort key starts with `prefix`; spread into
 * a QueryCommandInput (add more values with `{ ...q.ExpressionAttributeValues, ':x': v }`).
 */
export function prefixRange(pk: string, prefix: string): PrefixQuery {
  return {
    KeyConditionExpression: 'pk = :p AND sk BETWEEN :lo AND :hi',
    ExpressionAttributeValues: { ':p': pk, ':lo': prefix, ':hi': prefixUpperBound(prefix) },
  };
}
