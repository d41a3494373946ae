/**
 * Watches a provider's answer on its way to the client without copying or delaying it: times the
 * first and last bytes, counts them, and reads the usage (and model) from a JSON body or from the
 * SSE events of a stream, in one pass. Calls `done` once, when the body ends or is torn down.
 */
import type { Readable } from 'node:stream';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Clock } from '../ports/clock.ts';
import type { GatewayRecord } from '../kernel/lifecycle.ts';
import { noteOpenAIUsage, noteUsage } from '../kernel/usage.ts';

/** JSON bodies larger than this are not parsed for usage (they are not chat answers). */
const MAX_JSON_BYTES = 4 << 20;
/** How much of a stream is kept for the log: copies, no parsing, on the way through. */
const MAX_STREAM_LOG_BYTES = 1 << 20;

export { toUsage } from '../kernel/usage.ts';

/**
 * `parsed`: the caller read the JSON answer's usage already (it was buffered to price it), so only
 * timings, byte counts and cancellation are watched.
 */
export function observeBody(body: Readable, contentType: string, record: GatewayRecord, clock: Clock, done: () => void, opts: { parsed?: boolean } = {}): void {
  const sse = contentType.includes('text/event-stream');
  const json = !sse && !opts.parsed && contentType.includes('json');
  const chunks: Buffer[] = [];
  let bytes = 0;
  let finished = false;
  const decoder = new TextDecoder();
  const parser = sse
    ? createParser({
        onEvent(event: EventSourceMessage) {
          // Only events that carry usage are parsed: the rest pass untouched.
          if (!event.data.includes('"usage"')) {
            if (record.model === undefined && event.data.includes('"model"')) noteUsage(record, undefined, readModel(event.data));
            return;
          }
          try {
            noteOpenAIUsage(record, JSON.parse(event.data));
          } catch {
            // not JSON: nothing to read
          }
        },
      })
    : undefined;

  const finish = (cancelled: boolean) => {
    if (finished) return;
    finished = true;
    record.endedAt = clock.now();
    record.responseBytes = bytes;
    if (cancelled) record.cancelled = true;
    if (sse && chunks.length) record.streamText = Buffer.concat(chunks).toString('utf8');
    if (json && chunks.length) {
      try {
        const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        record.response = parsed;
        noteOpenAIUsage(record, parsed);
      } catch {
        // a non-JSON body: keep the byte count only
      }
    }
    done();
  };

  body.on('data', (chunk: Buffer) => {
    if (bytes === 0) record.firstByteAt = clock.now();
    bytes += chunk.length;
    if (parser) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (bytes <= MAX_STREAM_LOG_BYTES) chunks.push(chunk);
    } else if (json && bytes <= MAX_JSON_BYTES) chunks.push(chunk);
  });
  // Listening for data must not start the flow before the consumer is attached.
  body.pause();
  body.once('end', () => finish(false));
  body.once('close', () => finish(!body.readableEnded));
}

function readModel(data: string): string | undefined {
  const m = /"model"\s*:\s*"([^"]+)"/.exec(data);
  return m?.[1];
}
