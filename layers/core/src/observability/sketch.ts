/**
 * Unique users with bounded storage: linear counting over 1024 buckets. Each user id hashes to one
 * bucket; a rollup keeps the set of buckets seen (a DynamoDB number set, so updates are atomic
 * unions and ranges merge exactly). The estimate -m ln(empty/m) is within about 5% up to a thousand
 * users and 10% up to five thousand, and saturates near seven thousand (then read it as "at least").
 */

export const USER_BUCKETS = 1024;

/** FNV-1a, 32 bits, with a final mix: stable across processes and runtimes. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // murmur3's finalizer: FNV-1a alone leaves the low bits of similar ids correlated.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export const userBucket = (user: string): number => fnv1a(user) % USER_BUCKETS;

export function estimateUsers(buckets: ReadonlySet<number>): number {
  const filled = buckets.size;
  if (filled === 0) return 0;
  // Every bucket taken: the best estimate is where saturation is expected.
  const empty = Math.max(USER_BUCKETS - filled, 0.5);
  return Math.round(-USER_BUCKETS * Math.log(empty / USER_BUCKETS));
}
