/**
 * A streamed answer as guardrails see it: each SSE event with the text it adds (chat and
 * completions chunks, Responses' `response.output_text.delta`, Anthropic's `text_delta`), and,
 * when a check denies mid-stream, the protocol's own way to end it: for chat and completions a
 * choice with `finish_reason: "content_filter"`, a chunk with `hook_results` and `[DONE]`; for
 * Responses `response.incomplete` (reason `content_filter`); for Anthropic's messages the open
 * block closed and `message_delta` with stop reason `refusal`, then `message_stop`.
 */
import type { Readable } from 'node:stream';
import type { EventSourceMessage } from 'eventsource-parser';
import { sseReader } from '../providers/native/sse-in.ts';
import type { Piece } from '../guardrails/window-gate.ts';

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const frame = (e: EventSourceMessage): string => `${e.event ? `event: ${e.event}\n` : ''}data: ${e.data}\n\n`;
const named = (type: string, data: Json): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

export class StreamText {
  #format: 'chat' | 'completion' | 'responses' | 'anthropic' | undefined;
  #chunk: Json = {};
  #response: Json | undefined;
  #openBlock: number | undefined;
  #sequence = 0;

  /** The text an event adds, noting what the terminal events will need. */
  textOf(e: EventSourceMessage): string {
    if (e.data === '[DONE]' || e.data === '') return '';
    let data: unknown;
    try {
      data = JSON.parse(e.data);
    } catch {
      return '';
    }
    if (!isRecord(data)) return '';
    if (Array.isArray(data.choices)) return this.#choices(data);
    if (typeof data.sequence_number === 'number') this.#sequence = data.sequence_number;
    const type = data.type;
    if (typeof type !== 'string') return '';
    if (type.startsWith('response.')) {
      this.#format = 'responses';
      if (isRecord(data.response)) this.#response = data.response;
      return type === 'response.output_text.delta' && typeof data.delta === 'string' ? data.delta : '';
    }
    this.#format = 'anthropic';
    if (type === 'content_block_start' && typeof data.index === 'number') this.#openBlock = data.index;
    if (type === 'content_block_stop') this.#openBlock = undefined;
    const delta = data.delta;
    return type === 'content_block_delta' && isRecord(delta) && delta.type === 'text_delta' && typeof delta.text === 'string' ? delta.text : '';
  }

  #choices(data: Json): string {
    this.#format = data.object === 'text_completion' ? 'completion' : 'chat';
    this.#chunk = { id: data.id, object: data.object, created: data.created, model: data.model };
    let text = '';
    for (const c of data.choices as unknown[]) {
      if (!isRecord(c)) continue;
      if (isRecord(c.delta) && typeof c.delta.content === 'string') text += c.delta.content;
      else if (typeof c.text === 'string') text += c.text;
    }
    return text;
  }

  /** The events that end the stream once a check denied it; empty when the format is unknown. */
  terminal(hookResults: Json): string {
    switch (this.#format) {
      case 'chat':
      case 'completion': {
        const choice = this.#format === 'chat' ? { index: 0, delta: {}, finish_reason: 'content_filter' } : { index: 0, text: '', logprobs: null, finish_reason: 'content_filter' };
        const base = { ...this.#chunk, object: this.#format === 'chat' ? 'chat.completion.chunk' : 'text_completion' };
        // `choices: []` as in usage chunks, so code reading `chunk.choices[0]?.…` keeps working.
        return `data: ${JSON.stringify({ ...base, choices: [choice] })}\n\ndata: ${JSON.stringify({ ...base, choices: [], hook_results: hookResults })}\n\ndata: [DONE]\n\n`;
      }
      case 'responses': {
        const response = { ...this.#response, status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
        return named('response.incomplete', { sequence_number: this.#sequence + 1, response, hook_results: hookResults });
      }
      case 'anthropic': {
        const close = this.#openBlock === undefined ? '' : named('content_block_stop', { index: this.#openBlock });
        return `${close}${named('message_delta', { delta: { stop_reason: 'refusal', stop_sequence: null }, usage: { output_tokens: 0 } })}${named('message_stop', {})}`;
      }
      default:
        return '';
    }
  }
}

/** The events of an SSE body as gate pieces: the text each adds, and the event's bytes to release. */
export async function* ssePieces(body: Readable, text: StreamText): AsyncGenerator<Piece<string>> {
  const ready: EventSourceMessage[] = [];
  const reader = sseReader((e) => ready.push(e));
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      reader.push(chunk);
      for (const e of ready.splice(0)) yield { text: text.textOf(e), payload: frame(e) };
    }
    reader.end();
    for (const e of ready.splice(0)) yield { text: text.textOf(e), payload: frame(e) };
  } finally {
    body.destroy();
  }
}
