/**
 * The response cache: one table item per cache key with a TTL, bodies beyond what an item holds
 * in blob storage. Entries past their `expires_at` are never served, even while DynamoDB has not
 * yet deleted them (its TTL deletion can lag by days).
 */
import type { BlobStore } from '../../ports/blob.ts';
import type { Clock } from '../../ports/clock.ts';
import type { TableClient } from '../../store/repositories.ts';
import { CacheEntryStore, type CacheEntryRecord } from '../../store/response-cache.ts';

export interface CacheEntryInput {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
  /** True when `body` is the raw SSE bytes of a streamed response, to be replayed as a stream. */
  streamed: boolean;
}

export interface CachedResponse extends CacheEntryInput {
  /** Unix milliseconds when the entry was written. */
  createdAt: number;
  /** Unix milliseconds from which the entry is no longer served. */
  expiresAt: number;
}

export interface ResponseCacheOptions {
  /** Bodies larger than this many bytes go to blob storage (an item holds at most 400 KB). */
  inlineMaxBytes?: number;
  /** Entries also kept in process memory (0 turns that off). */
  memoryEntries?: number;
  /** Only bodies up to this size are kept in memory. */
  memoryMaxBytes?: number;
}

const DEFAULT_INLINE_MAX_BYTES = 300_000;

const blobKey = (key: string): string => `cache/${key}`;

export class ResponseCache {
  readonly #entries: CacheEntryStore;
  readonly #blobs: BlobStore;
  readonly #clock: Clock;
  readonly #inlineMaxBytes: number;
  readonly #memoryEntries: number;
  readonly #memoryMaxBytes: number;
  /**
   * Hot entries in process memory, least recently used first. An entry is immutable until its own
   * expiry, so serving it from memory is as correct as from the table (a refresh on another
   * instance writes a newer answer; this one stays valid until it expires).
   */
  readonly #memory = new Map<string, CachedResponse>();

  constructor(table: TableClient, blobs: BlobStore, clock: Clock, opts: ResponseCacheOptions = {}) {
    this.#entries = new CacheEntryStore(table);
    this.#blobs = blobs;
    this.#clock = clock;
    this.#inlineMaxBytes = opts.inlineMaxBytes ?? DEFAULT_INLINE_MAX_BYTES;
    this.#memoryEntries = opts.memoryEntries ?? 512;
    this.#memoryMaxBytes = opts.memoryMaxBytes ?? 64 * 1024;
  }

  #remember(key: string, entry: CachedResponse): void {
    if (this.#memoryEntries === 0 || entry.body.byteLength > this.#memoryMaxBytes) return;
    this.#memory.delete(key);
    this.#memory.set(key, entry);
    if (this.#memory.size > this.#memoryEntries) {
      const oldest = this.#memory.keys().next();
      if (!oldest.done) this.#memory.delete(oldest.value);
    }
  }

  async get(key: string): Promise<CachedResponse | undefined> {
    const held = this.#memory.get(key);
    if (held) {
      if (this.#clock.now() < held.expiresAt) {
        this.#remember(key, held);
        return held;
      }
      this.#memory.delete(key);
    }
    const found = await this.#read(key);
    if (found) this.#remember(key, found);
    return found;
  }

  async #read(key: string): Promise<CachedResponse | undefined> {
    const entry = await this.#entries.get(key);
    if (!entry) return undefined;
    const expiresAt = entry.expires_at * 1000;
    if (this.#clock.now() >= expiresAt) return undefined;
    let body = entry.body;
    if (entry.blob_key !== undefined) {
      body = await this.#blobs.get(entry.blob_key);
      // The blob was removed (e.g. by a bucket lifecycle rule): a miss, not an error.
      if (!body) return undefined;
    }
    return {
      status: entry.status,
      headers: entry.headers,
      body: body ?? new Uint8Array(0),
      streamed: entry.streamed,
      createdAt: Date.parse(entry.created_at),
      expiresAt,
    };
  }

  /** Stores (or replaces) the entry for `maxAgeSeconds`; a max age of 0 or less stores nothing. */
  async put(key: string, entry: CacheEntryInput, maxAgeSeconds: number): Promise<void> {
    if (!(maxAgeSeconds > 0)) return;
    const now = this.#clock.now();
    const expiresAt = Math.floor((now + maxAgeSeconds * 1000) / 1000);
    // In memory at once, before the first await: the same request a moment later is a hit here.
    this.#remember(key, { ...entry, createdAt: now, expiresAt: expiresAt * 1000 });
    const record: CacheEntryRecord = {
      key,
      status: entry.status,
      headers: entry.headers,
      streamed: entry.streamed,
      created_at: new Date(now).toISOString(),
      // Rounded down: an entry may leave up to a second early, never late.
      expires_at: expiresAt,
    };
    const inline = entry.body.byteLength <= this.#inlineMaxBytes;
    if (inline) {
      record.body = entry.body;
    } else {
      // The blob first, so that no item ever names a blob that is not there yet.
      record.blob_key = blobKey(key);
      await this.#blobs.put(record.blob_key, entry.body, entry.headers['content-type']);
    }
    const oldBlob = await this.#entries.put(record);
    // A refresh that now fits inline leaves the earlier blob unused: remove it.
    if (inline && oldBlob !== undefined) await this.#blobs.delete(oldBlob);
  }
}
