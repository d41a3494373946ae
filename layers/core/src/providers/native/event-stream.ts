/**
 * AWS event-stream framing (application/vnd.amazon.eventstream), as Bedrock streams: each message
 * is length-prefixed and CRC-checked; @smithy's codec decodes a whole message, this cuts them out
 * of the bytes as they arrive.
 */
import { EventStreamCodec, type MessageHeaders } from '@smithy/core/event-streams';

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);

/** A frame larger than this is a corrupt stream, not an event. */
const MAX_MESSAGE_BYTES = 16 << 20;

export interface StreamEvent {
  /** `:event-type` for events, `:exception-type` for exceptions. */
  type: string;
  exception: boolean;
  payload: unknown;
}

const header = (headers: MessageHeaders, name: string): string | undefined => {
  const h = headers[name];
  return h && h.type === 'string' ? h.value : undefined;
};

export class EventStreamDecoder {
  #buffer: Buffer = Buffer.alloc(0);

  /** Feeds bytes; returns the events completed by them. Throws on a corrupt frame. */
  push(chunk: Uint8Array): StreamEvent[] {
    this.#buffer = this.#buffer.length ? Buffer.concat([this.#buffer, chunk]) : Buffer.from(chunk);
    const events: StreamEvent[] = [];
    while (this.#buffer.length >= 4) {
      const length = this.#buffer.readUInt32BE(0);
      if (length < 16 || length > MAX_MESSAGE_BYTES) throw new Error(`Corrupt event-stream frame (length ${length})`);
      if (this.#buffer.length < length) break;
      const message = codec.decode(this.#buffer.subarray(0, length));
      this.#buffer = this.#buffer.subarray(length);
      const messageType = header(message.headers, ':message-type') ?? 'event';
      const exception = messageType !== 'event';
      const type =
        (exception ? (header(message.headers, ':exception-type') ?? header(message.headers, ':error-code')) : header(message.headers, ':event-type')) ?? '';
      let payload: unknown;
      const text = Buffer.from(message.body).toString('utf8');
      try {
        payload = text ? (JSON.parse(text) as unknown) : {};
      } catch {
        payload = { message: text };
      }
      events.push({ type, exception, payload });
    }
    return events;
  }

  /** Bytes of an incomplete frame left over. */
  get pending(): number {
    return this.#buffer.length;
  }
}
