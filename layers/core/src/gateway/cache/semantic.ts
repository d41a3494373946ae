/**
 * Semantic caching: the system prompt and the last user turn are embedded, and a request hits when
 * an earlier one of the same model and parameters (same partition) lies close enough by cosine
 * similarity. The index maps a vector to a cache key; the response itself lives in ResponseCache.
 */
import { isRecord } from '../../http/json.ts';
import type { Clock } from '../../ports/clock.ts';
import type { TableClient } from '../../store/repositories.ts';
import { VectorItems, type VectorEntryRecord, type VectorMarkerRecord } from '../../store/vector-index.ts';
import { canonicalJson, sha256Hex } from './key.ts';

/** Turns text into an embedding vector (the embedding provider call). */
export type Embedder = (text: string) => Promise<Float32Array>;

export interface VectorMatch {
  /** The cache key stored with the vector. */
  key: string;
  score: number;
}

export interface VectorIndex {
  /** The closest unexpired vector of the partition scoring at least `threshold`, if any. */
  query(partition: string, vector: Float32Array, threshold: number, nowMs: number): Promise<VectorMatch | undefined>;
  upsert(partition: string, key: string, vector: Float32Array, expiresAtMs: number): Promise<void>;
}

export const DEFAULT_SIMILARITY_THRESHOLD = 0.95;

/** Cosine similarity in [-1, 1]; 0 when either vector is all zeros. */
export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new RangeError(`Vectors differ in length: ${a.length} and ${b.length}`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** Hash of the request without its messages: requests alike in every parameter share it. */
export function paramsHash(body: Record<string, unknown>): string {
  const { messages: _messages, ...params } = body;
  return sha256Hex(canonicalJson(params));
}

export interface SemanticPartitionInput {
  workspaceId: string;
  /** The `x-gw-cache-namespace` header; absent or empty means the default namespace. */
  namespace?: string | undefined;
  endpoint: string;
  model: string;
  /** See paramsHash. */
  paramsHash: string;
  /** The embedding provider and model: vectors of different embedders cannot be compared. */
  embedder?: string | undefined;
}

/** `<workspace>#<hash>`: the workspace stays readable in the table, the rest is hashed to a fixed size. */
export function semanticPartition(input: SemanticPartitionInput): string {
  const hash = sha256Hex(
    canonicalJson({
      v: 1,
      namespace: input.namespace || null,
      endpoint: input.endpoint,
      model: input.model,
      params: input.paramsHash,
      embedder: input.embedder ?? null,
    }),
  );
  return `${input.workspaceId}#${hash}`;
}

/** The text of a message's content, or undefined when it holds anything but text. */
function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  const texts: string[] = [];
  for (const part of content) {
    if (!isRecord(part) || part.type !== 'text' || typeof part.text !== 'string') return undefined;
    texts.push(part.text);
  }
  return texts.join('\n');
}

/**
 * What is embedded: the system (and developer) prompts and the last user turn, one per line with
 * its role. Undefined, meaning "do not use the semantic cache", when the conversation does not end
 * on a user turn (tool results or an assistant prefill would decide the answer unseen), when that
 * turn holds non-text parts (two different images with the same caption must not match), or when
 * there is no text at all.
 */
export function semanticText(messages: readonly unknown[]): string | undefined {
  const last = messages.at(-1);
  if (!isRecord(last) || last.role !== 'user') return undefined;
  const user = textOf(last.content);
  if (!user?.trim()) return undefined;
  const lines: string[] = [];
  for (const m of messages) {
    if (!isRecord(m) || (m.role !== 'system' && m.role !== 'developer')) continue;
    const text = textOf(m.content);
    if (text === undefined) return undefined;
    if (text.trim()) lines.push(`system: ${text}`);
  }
  lines.push(`user: ${user}`);
  return lines.join('\n');
}

export interface DynamoVectorIndexOptions {
  /** Entries a partition keeps, and so the most a lookup reads (default 200). */
  maxEntries?: number;
}

const DEFAULT_MAX_ENTRIES = 200;

/** Native typed arrays are little-endian on every platform we run on (x86-64, arm64). */
const encode = (v: Float32Array): Uint8Array => new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));

function decode(bytes: unknown): Float32Array | undefined {
  if (!(bytes instanceof Uint8Array) || bytes.byteLength % 4 !== 0) return undefined;
  // A Float32Array view needs 4-byte alignment; copy when the SDK's buffer does not give it.
  if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  return new Float32Array(bytes.slice().buffer);
}

/**
 * VectorIndex on the single table. A partition is read newest first and never beyond maxEntries
 * items, so a lookup costs a bounded read whatever the traffic; upserts trim older entries.
 */
export class DynamoVectorIndex implements VectorIndex {
  readonly #items: VectorItems;
  readonly #clock: Clock;
  readonly maxEntries: number;

  constructor(table: TableClient, clock: Clock, opts: DynamoVectorIndexOptions = {}) {
    this.#items = new VectorItems(table, clock);
    this.#clock = clock;
    this.maxEntries = opts.maxEntries ?? DEFAULT_MAX_ENTRIES;
  }

  async query(partition: string, vector: Float32Array, threshold: number, nowMs: number): Promise<VectorMatch | undefined> {
    let best: VectorMatch | undefined;
    for (const item of await this.#items.newest(partition, this.maxEntries)) {
      if (!(typeof item.expires_at_ms === 'number' && item.expires_at_ms > nowMs)) continue;
      const stored = decode(item.vector);
      // A vector of another length comes from another embedding model: not comparable.
      if (!stored || stored.length !== vector.length || typeof item.key !== 'string') continue;
      const score = cosine(vector, stored);
      if (score >= threshold && (!best || score > best.score)) best = { key: item.key, score };
    }
    return best;
  }

  async upsert(partition: string, key: string, vector: Float32Array, expiresAtMs: number): Promise<void> {
    const now = this.#clock.now();
    if (expiresAtMs <= now) return;
    const record: VectorEntryRecord = {
      partition,
      key,
      vector: encode(vector),
      created_at: new Date(now).toISOString(),
      expires_at_ms: expiresAtMs,
    };
    await this.#items.put(record);
    await this.#trim(partition, now);
  }

  /** Keeps the newest maxEntries unexpired entries, one per cache key; deletes the rest (best effort). */
  async #trim(partition: string, nowMs: number): Promise<void> {
    const seen = new Set<unknown>();
    const doomed: Pick<VectorMarkerRecord, 'created_at' | 'key'>[] = [];
    for (const m of await this.#items.markers(partition)) {
      const live = typeof m.expires_at_ms === 'number' && m.expires_at_ms > nowMs;
      if (live && !seen.has(m.key) && seen.size < this.maxEntries) seen.add(m.key);
      else doomed.push(m);
    }
    await this.#items.delete(partition, doomed);
  }
}
