/**
 * A durable spool for an in-process queue: what the queue accepts is appended to a JSONL segment on
 * disk before `send` resolves, and forgotten once its consumer acknowledged it, so that a database
 * outage, a crash or a restart of the local server loses no message (SQS with its dead-letter queue
 * gives the same guarantee in AWS). Layout of `dir`: `<seq>.jsonl` segments of `{"id","body"}`
 * lines, and a `<seq>.acks` file per segment with the ids its consumer acknowledged, one a line. A
 * segment and its acks file are deleted once every message of the segment is acknowledged.
 *
 * Appends are synchronous writes (in the OS's cache at once: a crash of the process keeps them);
 * `sync()` makes them durable against a crash of the machine too, by group commit: one fdatasync
 * covers every append made before it started, and the callers arriving while it runs share the
 * next one, so the cost per message falls as the rate grows.
 */
import { closeSync, fdatasync, fdatasyncSync, fsync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const fdatasyncAsync = promisify(fdatasync);
const fsyncAsync = promisify(fsync);

export interface SpoolOptions {
  dir: string;
  /** Most bytes on disk (segments and acks); when full, new messages are not spooled, the oldest are kept. */
  maxBytes: number;
  /** Size at which the current segment is closed and a new one started (default maxBytes / 8, at most 8 MiB). */
  segmentBytes?: number;
  /** Called once per episode of a full spool (again only after a message was spooled since). */
  onFull?: (info: { dir: string; maxBytes: number }) => void;
  /** Called when a full spool takes messages again, with how many it refused meanwhile. */
  onRoom?: (info: { dir: string; refused: number }) => void;
  /** A write or fdatasync failed (the messages concerned are counted in `dropped` or `syncErrors`). */
  onError?: (err: unknown) => void;
  /** Whether `sync()` calls fdatasync (default true); without, appends survive a crash of the process only. */
  fsync?: boolean;
}

export interface SpooledMessage {
  id: string;
  body: unknown;
}

export interface SpoolStats {
  /** Bytes on disk now. */
  bytes: number;
  /** The bound (GW_LOG_SPOOL_MAX_MB). */
  maxBytes: number;
  /** Messages not spooled because the spool was full (or could not be written); delivered from memory only. */
  dropped: number;
  /** Messages spooled and not yet acknowledged. */
  pending: number;
  /** The spool refuses messages now (until one fits again). */
  full: boolean;
  /** Group fdatasyncs done, and failed (a failed one leaves its appends in the OS's cache only). */
  syncs: number;
  syncErrors: number;
}

const SEGMENT = /^(\d{12})\.jsonl$/;
const segmentFile = (seq: number) => `${String(seq).padStart(12, '0')}.jsonl`;
const acksFile = (seq: number) => `${String(seq).padStart(12, '0')}.acks`;

export class DiskSpool {
  readonly #dir: string;
  readonly #maxBytes: number;
  readonly #segmentBytes: number;
  readonly #onFull: SpoolOptions['onFull'];
  readonly #onRoom: SpoolOptions['onRoom'];
  readonly #onError: SpoolOptions['onError'];
  readonly #fsync: boolean;
  /** Unacknowledged message id -> its segment. */
  readonly #owner = new Map<string, number>();
  /** Segment -> how many of its messages are unacknowledged. */
  readonly #open = new Map<number, number>();
  /** Segment -> bytes of its segment and acks files. */
  readonly #sizes = new Map<number, number>();
  #bytes = 0;
  #dropped = 0;
  #full = false;
  /** Messages refused in the current full episode. */
  #refused = 0;
  #seq = 0;
  #fd: number | undefined;
  /** Group commit: appends made, appends an fdatasync has covered, the one running, the next one. */
  #appended = 0;
  #synced = 0;
  #syncing: Promise<void> | undefined;
  #nextSync: Promise<void> | undefined;
  /** Files written since their last fdatasync began (the directory's too, after a segment was created). */
  readonly #dirty = new Set<number>();
  /** Rotated segments' descriptors, closed once no fdatasync needs them. */
  readonly #retired = new Set<number>();
  #dirFd: number | undefined;
  #syncs = 0;
  #syncErrors = 0;

  constructor(opts: SpoolOptions) {
    if (!Number.isFinite(opts.maxBytes) || opts.maxBytes < 1) throw new RangeError(`maxBytes must be positive, got ${opts.maxBytes}`);
    this.#dir = opts.dir;
    this.#maxBytes = opts.maxBytes;
    this.#segmentBytes = opts.segmentBytes ?? Math.min(Math.max(Math.floor(opts.maxBytes / 8), 1), 8 * 1024 * 1024);
    this.#onFull = opts.onFull;
    this.#onRoom = opts.onRoom;
    this.#onError = opts.onError;
    this.#fsync = opts.fsync ?? true;
    mkdirSync(this.#dir, { recursive: true });
  }

  /**
   * The unacknowledged messages left by an earlier process, oldest first; they count as spooled
   * again (the caller re-enqueues them). Call once, before the first append.
   */
  replay(): SpooledMessage[] {
    const seqs = readdirSync(this.#dir)
      .map((f) => SEGMENT.exec(f)?.[1])
      .filter((s): s is string => s !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    const out: SpooledMessage[] = [];
    for (const seq of seqs) {
      const left = this.#readSegment(seq);
      if (left.length === 0) this.#delete(seq);
      else {
        for (const m of left) this.#owner.set(m.id, seq);
        this.#open.set(seq, left.length);
        out.push(...left);
      }
    }
    // New messages go to a segment of their own: an earlier process may have left a torn last line.
    this.#seq = (seqs.at(-1) ?? 0) + 1;
    return out;
  }

  /** Unacknowledged messages of one segment; a torn line (a crash mid-write) is skipped. */
  #readSegment(seq: number): SpooledMessage[] {
    const acked = new Set(readLines(path.join(this.#dir, acksFile(seq))));
    const lines = readLines(path.join(this.#dir, segmentFile(seq)));
    const size = fileSize(path.join(this.#dir, segmentFile(seq))) + fileSize(path.join(this.#dir, acksFile(seq)));
    this.#sizes.set(seq, size);
    this.#bytes += size;
    const left: SpooledMessage[] = [];
    for (const line of lines) {
      const m = parseLine(line);
      if (m && !acked.has(m.id)) left.push(m);
    }
    return left;
  }

  /**
   * Writes the messages with one synchronous write, so they are on disk (in the OS's cache, which a
   * process restart keeps) when this returns; `sync()` then makes them durable. False when they
   * were not spooled (full, or the write failed): the caller still delivers them from memory.
   */
  append(messages: readonly SpooledMessage[]): boolean {
    return this.appendJson(messages.map((m) => ({ id: m.id, json: JSON.stringify(m.body) })));
  }

  /**
   * `append` for bodies the caller has already serialised (`json`: the body's JSON text), so a
   * queue that needs the text anyway serialises each body once.
   */
  appendJson(messages: readonly { id: string; json: string }[]): boolean {
    if (messages.length === 0) return true;
    // The same line `JSON.stringify({ id, body })` writes; an id is a UUID, which needs no escaping.
    const data = Buffer.from(messages.map((m) => `{"id":${JSON.stringify(m.id)},"body":${m.json}}\n`).join(''));
    if (this.#bytes + data.length > this.#maxBytes) return this.#refuse(messages.length);
    try {
      this.#fd ??= this.#create(this.#seq);
      writeSync(this.#fd, data);
    } catch (err) {
      // A partial line may be left: later lines go to a segment of their own, never glued to it.
      this.#rotate();
      this.#onError?.(err);
      return this.#refuse(messages.length);
    }
    const seq = this.#seq;
    for (const m of messages) this.#owner.set(m.id, seq);
    this.#open.set(seq, (this.#open.get(seq) ?? 0) + messages.length);
    this.#grow(seq, data.length);
    if (this.#fsync) this.#dirty.add(this.#fd);
    this.#appended++;
    if (this.#full) {
      this.#full = false;
      this.#onRoom?.({ dir: this.#dir, refused: this.#refused });
      this.#refused = 0;
    }
    if ((this.#sizes.get(seq) ?? 0) >= this.#segmentBytes) this.#rotate();
    return true;
  }

  /**
   * Resolves once every append made before the call is durable (fdatasync'd), at once without
   * fsync. Never rejects: a failed fdatasync is counted and reported, its appends stay in the OS's
   * cache (a crash of the process keeps them, one of the machine may not).
   */
  sync(): Promise<void> {
    if (!this.#fsync || this.#synced >= this.#appended) return Promise.resolve();
    if (!this.#syncing) return (this.#syncing = this.#runSync());
    // One fdatasync runs and may have started before these appends: they share the next one.
    return (this.#nextSync ??= this.#syncing.then(() => {
      this.#nextSync = undefined;
      return this.sync();
    }));
  }

  async #runSync(): Promise<void> {
    const upTo = this.#appended;
    const fds = [...this.#dirty];
    this.#dirty.clear();
    try {
      // A directory is fsync'd: its entries are not file data.
      await Promise.all(fds.map((fd) => (fd === this.#dirFd ? fsyncAsync(fd) : fdatasyncAsync(fd))));
      this.#syncs++;
    } catch (err) {
      this.#syncErrors++;
      this.#onError?.(err);
    } finally {
      this.#synced = Math.max(this.#synced, upTo);
      this.#syncing = undefined;
      this.#closeRetired();
    }
  }

  /** Opens a new segment; its directory entry is made durable by the next sync. */
  #create(seq: number): number {
    const fd = openSync(path.join(this.#dir, segmentFile(seq)), 'a');
    if (this.#fsync) {
      try {
        this.#dirFd ??= openSync(this.#dir, 'r');
        this.#dirty.add(this.#dirFd);
      } catch {
        // Directories cannot be opened everywhere (Windows); the segment's data is still synced.
      }
    }
    return fd;
  }

  /**
   * Unacknowledged messages not in `skip` (those its queue holds in memory), oldest first, at most
   * `limit`: the queue reads back what it kept on disk only. Reads whole segments; they are small.
   */
  readBack(skip: ReadonlySet<string>, limit: number): SpooledMessage[] {
    const out: SpooledMessage[] = [];
    const seqs = [...this.#open.entries()]
      .filter(([, left]) => left > 0)
      .map(([seq]) => seq)
      .sort((a, b) => a - b);
    for (const seq of seqs) {
      for (const line of readLines(path.join(this.#dir, segmentFile(seq)))) {
        const m = parseLine(line);
        if (m && this.#owner.get(m.id) === seq && !skip.has(m.id)) out.push(m);
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  /** Records the acknowledgement of spooled messages (ids it does not hold are ignored). */
  ack(ids: readonly string[]): void {
    const bySeq = new Map<number, string[]>();
    for (const id of ids) {
      const seq = this.#owner.get(id);
      if (seq === undefined) continue;
      this.#owner.delete(id);
      bySeq.set(seq, [...(bySeq.get(seq) ?? []), id]);
    }
    for (const [seq, done] of bySeq) {
      const left = (this.#open.get(seq) ?? 0) - done.length;
      this.#open.set(seq, left);
      if (left > 0) this.#writeAcks(seq, done);
      else {
        // Every message of the segment is acknowledged: nothing of it needs keeping.
        if (seq === this.#seq) this.#rotate();
        this.#delete(seq);
      }
    }
  }

  stats(): SpoolStats {
    return {
      bytes: this.#bytes,
      maxBytes: this.#maxBytes,
      dropped: this.#dropped,
      pending: this.#owner.size,
      full: this.#full,
      syncs: this.#syncs,
      syncErrors: this.#syncErrors,
    };
  }

  /** Syncs what is left (at shutdown) and closes every file. */
  close(): void {
    this.#rotate();
    for (const fd of this.#dirty) {
      try {
        if (this.#fsync) (fd === this.#dirFd ? fsyncSync : fdatasyncSync)(fd);
      } catch (err) {
        this.#onError?.(err);
      }
    }
    this.#dirty.clear();
    if (!this.#syncing) this.#closeRetired();
    if (this.#dirFd !== undefined && !this.#syncing) {
      closeSync(this.#dirFd);
      this.#dirFd = undefined;
    }
  }

  #writeAcks(seq: number, ids: readonly string[]): void {
    const data = Buffer.from(ids.map((id) => `${id}\n`).join(''));
    try {
      const fd = openSync(path.join(this.#dir, acksFile(seq)), 'a');
      try {
        writeSync(fd, data);
      } finally {
        closeSync(fd);
      }
      this.#grow(seq, data.length);
    } catch {
      // A lost ack only means the message is delivered again after a restart; ingest is idempotent.
    }
  }

  #refuse(n: number): false {
    this.#dropped += n;
    this.#refused += n;
    if (!this.#full) {
      this.#full = true;
      this.#onFull?.({ dir: this.#dir, maxBytes: this.#maxBytes });
    }
    return false;
  }

  #grow(seq: number, n: number): void {
    this.#sizes.set(seq, (this.#sizes.get(seq) ?? 0) + n);
    this.#bytes += n;
  }

  /** The next append starts a new segment; the current one is closed once no fdatasync needs it. */
  #rotate(): void {
    if (this.#fd !== undefined) {
      this.#retired.add(this.#fd);
      this.#fd = undefined;
      if (!this.#syncing) this.#closeRetired();
    }
    this.#seq++;
  }

  /** Closes the rotated segments whose writes are synced (or need no sync). */
  #closeRetired(): void {
    for (const fd of this.#retired) {
      if (this.#fsync && this.#dirty.has(fd)) continue;
      this.#retired.delete(fd);
      try {
        closeSync(fd);
      } catch {
        // Already closed.
      }
    }
  }

  #delete(seq: number): void {
    rmSync(path.join(this.#dir, segmentFile(seq)), { force: true });
    rmSync(path.join(this.#dir, acksFile(seq)), { force: true });
    this.#bytes -= this.#sizes.get(seq) ?? 0;
    this.#sizes.delete(seq);
    this.#open.delete(seq);
  }
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function parseLine(line: string): SpooledMessage | undefined {
  try {
    const v: unknown = JSON.parse(line);
    if (v && typeof v === 'object' && 'id' in v && typeof v.id === 'string' && 'body' in v) return { id: v.id, body: v.body };
  } catch {
    // A torn line: its send never resolved, so nobody was told it was kept.
  }
  return undefined;
}
