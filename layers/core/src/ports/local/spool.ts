/**
 * A durable spool for an in-process queue: what the queue accepts is appended to a JSONL segment on
 * disk before `send` resolves, and forgotten once its consumer acknowledged it, so that a database
 * outage or a restart of the local server loses no message (SQS with its dead-letter queue gives the
 * same guarantee in AWS). Layout of `dir`: `<seq>.jsonl` segments of `{"id","body"}` lines, and a
 * `<seq>.acks` file per segment with the ids its consumer acknowledged, one a line. A segment and
 * its acks file are deleted once every message of the segment is acknowledged.
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';

export interface SpoolOptions {
  dir: string;
  /** Most bytes on disk (segments and acks); when full, new messages are not spooled, the oldest are kept. */
  maxBytes: number;
  /** Size at which the current segment is closed and a new one started (default maxBytes / 8, at most 8 MiB). */
  segmentBytes?: number;
  /** Called once per episode of a full spool (again only after a message was spooled since). */
  onFull?: (info: { dir: string; maxBytes: number }) => void;
}

export interface SpooledMessage {
  id: string;
  body: unknown;
}

export interface SpoolStats {
  /** Bytes on disk now. */
  bytes: number;
  /** Messages not spooled because the spool was full (or could not be written); delivered from memory only. */
  dropped: number;
  /** Messages spooled and not yet acknowledged. */
  pending: number;
}

const SEGMENT = /^(\d{12})\.jsonl$/;
const segmentFile = (seq: number) => `${String(seq).padStart(12, '0')}.jsonl`;
const acksFile = (seq: number) => `${String(seq).padStart(12, '0')}.acks`;

export class DiskSpool {
  readonly #dir: string;
  readonly #maxBytes: number;
  readonly #segmentBytes: number;
  readonly #onFull: SpoolOptions['onFull'];
  /** Unacknowledged message id -> its segment. */
  readonly #owner = new Map<string, number>();
  /** Segment -> how many of its messages are unacknowledged. */
  readonly #open = new Map<number, number>();
  /** Segment -> bytes of its segment and acks files. */
  readonly #sizes = new Map<number, number>();
  #bytes = 0;
  #dropped = 0;
  #full = false;
  #seq = 0;
  #fd: number | undefined;

  constructor(opts: SpoolOptions) {
    if (!Number.isFinite(opts.maxBytes) || opts.maxBytes < 1) throw new RangeError(`maxBytes must be positive, got ${opts.maxBytes}`);
    this.#dir = opts.dir;
    this.#maxBytes = opts.maxBytes;
    this.#segmentBytes = opts.segmentBytes ?? Math.min(Math.max(Math.floor(opts.maxBytes / 8), 1), 8 * 1024 * 1024);
    this.#onFull = opts.onFull;
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
   * process restart keeps) when this returns. False when they were not spooled (full, or the write
   * failed): the caller still delivers them from memory.
   */
  append(messages: readonly SpooledMessage[]): boolean {
    if (messages.length === 0) return true;
    const data = Buffer.from(messages.map((m) => `${JSON.stringify(m)}\n`).join(''));
    if (this.#bytes + data.length > this.#maxBytes) return this.#refuse(messages.length);
    try {
      if (this.#fd === undefined) this.#fd = openSync(path.join(this.#dir, segmentFile(this.#seq)), 'a');
      writeSync(this.#fd, data);
    } catch {
      return this.#refuse(messages.length);
    }
    const seq = this.#seq;
    for (const m of messages) this.#owner.set(m.id, seq);
    this.#open.set(seq, (this.#open.get(seq) ?? 0) + messages.length);
    this.#grow(seq, data.length);
    this.#full = false;
    if ((this.#sizes.get(seq) ?? 0) >= this.#segmentBytes) this.#rotate();
    return true;
  }

  /**
   * Unacknowledged messages not in `skip` (those its queue holds in memory), oldest first, at most
   * `limit`: the queue reads back what it kept on disk only. Reads whole segments; they are small.
   */
  readBack(skip: ReadonlySet<string>, limit: number): SpooledMessage[] {
    const out: SpooledMessage[] = [];
    const seqs = [...this.#open.entries()].filter(([, left]) => left > 0).map(([seq]) => seq).sort((a, b) => a - b);
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
    return { bytes: this.#bytes, dropped: this.#dropped, pending: this.#owner.size };
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
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

  #rotate(): void {
    this.close();
    this.#seq++;
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
