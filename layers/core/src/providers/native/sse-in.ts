/** Reading a provider's server-sent events from raw bytes, pushed as they arrive. */
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface SseReader {
  /** Feeds bytes; calls back once per complete event. */
  push(chunk: Uint8Array): void;
  /** Flushes a last event that was not followed by a blank line. */
  end(): void;
}

export function sseReader(onEvent: (event: EventSourceMessage) => void): SseReader {
  const decoder = new TextDecoder();
  const parser = createParser({ onEvent });
  return {
    push: (chunk) => parser.feed(decoder.decode(chunk, { stream: true })),
    end: () => {
      parser.feed(decoder.decode() + '\n\n');
    },
  };
}

/** Parses an event's JSON data; undefined for `[DONE]` and anything that is not JSON. */
export function eventJson(event: EventSourceMessage): unknown {
  if (event.data === '' || event.data === '[DONE]') return undefined;
  try {
    return JSON.parse(event.data) as unknown;
  } catch {
    return undefined;
  }
}
