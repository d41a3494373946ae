/**
 * A streamed answer as guardrails see it: each SSE event with the text it adds (chat and
 * completions chunks with their content, refusals, reasoning and tool-call names and arguments;
 * Responses' deltas of every kind; Anthropic's text, tool input and thinking deltas), events that
 * repeat the answer (`.done` events, the final response) adding whatever they carry that the stream
 * did not, and,
 * when a check denies mid-stream, the protocol's own way to end it: for chat and completions a
 * choice with `finish_reason: "content_filter"`, a chunk with `hook_results` and `[DONE]`; for
 * Responses `response.incomplete` (reason `content_filter`); for Anthropic's messages the open
 * block closed and `message_delta` with stop reason `refusal`, then `message_stop`.
 */
import type { Readable } from 'node:stream';
import type { EventSourceMessage } from 'eventsource-parser';
import { sseReader } from '../providers/native/sse-in.ts';
import type { Piece } from '../guardrails/window-gate.ts';
import { mapResponseText } from '../guardrails/text.ts';

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const frame = (e: EventSourceMessage): string => `${e.event ? `event: ${e.event}\n` : ''}data: ${e.data}\n\n`;
const named = (type: string, data: Json): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** How much of a channel's text is carried back when the channel is taken up again (the largest useful window context). */
const CHANNEL_TAIL = 1_000;

const AUDIO_DELTA = /(^|[._])audio\.delta$/;

export class StreamText {
  #format: 'chat' | 'completion' | 'responses' | 'anthropic' | undefined;
  #chunk: Json = {};
  #response: Json | undefined;
  #openBlock: number | undefined;
  #sequence = 0;
  /** Where the last text came from (a choice's content, a tool call's arguments ...). */
  #channel = '';
  /** All the text so far: a whole-text event whose text is in it adds nothing new to check. */
  #all = '';
  /** Each channel's last CHANNEL_TAIL characters. */
  readonly #channels = new Map<string, string>();

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
      return this.#responses(type, data);
    }
    this.#format = 'anthropic';
    return this.#anthropic(type, data);
  }

  /**
   * Text of one channel. A new channel starts on a new line, so texts of two channels never join
   * into one phrase; a channel taken up again after another one (interleaved tool calls, a name
   * repeated in every chunk) restarts with its own last characters, so a phrase split around the
   * interruption is still seen whole.
   */
  #add(channel: string, text: string): string {
    if (text === '') return '';
    const before = this.#channels.get(channel) ?? '';
    this.#channels.set(channel, (before + text).slice(-CHANNEL_TAIL));
    let out = text;
    if (channel !== this.#channel && this.#all !== '') out = `\n${before}${text}`;
    this.#channel = channel;
    this.#all += out;
    return out;
  }

  /** An event that repeats text (a `.done` event, the final response): only what the stream did not carry yet is new. */
  #whole(texts: readonly string[]): string {
    let out = '';
    for (const t of texts) if (t !== '' && !this.#all.includes(t)) out += this.#add(`whole:${this.#all.length}`, t);
    return out;
  }

  #choices(data: Json): string {
    this.#format = data.object === 'text_completion' ? 'completion' : 'chat';
    this.#chunk = { id: data.id, object: data.object, created: data.created, model: data.model };
    let text = '';
    for (const c of data.choices as unknown[]) {
      if (!isRecord(c)) continue;
      const at = `c${typeof c.index === 'number' ? c.index : 0}`;
      if (typeof c.text === 'string') text += this.#add(at, c.text);
      if (!isRecord(c.delta)) continue;
      const d = c.delta;
      for (const k of ['content', 'refusal', 'reasoning_content', 'reasoning'] as const) if (typeof d[k] === 'string') text += this.#add(`${at}:${k}`, d[k]);
      if (Array.isArray(d.tool_calls)) {
        for (const call of d.tool_calls) {
          if (!isRecord(call) || !isRecord(call.function)) continue;
          const ch = `${at}:tool${typeof call.index === 'number' ? call.index : 0}`;
          // Some providers repeat the name in every chunk: only a name not yet seen is new text.
          const name = call.function.name;
          if (typeof name === 'string' && this.#channels.get(`${ch}:name`) !== name) text += this.#add(`${ch}:name`, name);
          if (typeof call.function.arguments === 'string') text += this.#add(ch, call.function.arguments);
        }
      }
    }
    return text;
  }

  #responses(type: string, data: Json): string {
    // The response as it started (no output yet): the base of the terminal event.
    if ((type === 'response.created' || type === 'response.in_progress') && isRecord(data.response)) this.#response ??= data.response;
    const channel = `${String(data.item_id ?? data.output_index ?? '')}:${String(data.content_index ?? '')}`;
    // Audio deltas are base64 sound, not text (their transcripts are text).
    if (type.endsWith('.delta') && typeof data.delta === 'string') return AUDIO_DELTA.test(type) ? '' : this.#add(channel, data.delta);
    if (type === 'response.output_item.added' && isRecord(data.item) && typeof data.item.name === 'string') return this.#add(`${channel}:name`, data.item.name);
    const texts: string[] = [];
    const collect = (t: string): string => (texts.push(t), t);
    for (const k of ['text', 'refusal', 'arguments', 'input'] as const) if (typeof data[k] === 'string') texts.push(data[k]);
    if (isRecord(data.part)) mapResponseText({ output: [{ type: 'message', content: [data.part] }] }, collect);
    if (isRecord(data.item)) mapResponseText({ output: [data.item] }, collect);
    if (isRecord(data.response)) mapResponseText({ output: data.response.output ?? [] }, collect);
    return this.#whole(texts);
  }

  #anthropic(type: string, data: Json): string {
    if (type === 'content_block_start' && typeof data.index === 'number') this.#openBlock = data.index;
    if (type === 'content_block_stop') this.#openBlock = undefined;
    const channel = `b${String(data.index ?? '')}`;
    const delta = data.delta;
    if (type === 'content_block_delta' && isRecord(delta)) {
      for (const k of ['text', 'partial_json', 'thinking'] as const) if (typeof delta[k] === 'string') return this.#add(channel, delta[k]);
      return '';
    }
    const texts: string[] = [];
    const collect = (t: string): string => (texts.push(t), t);
    if (type === 'content_block_start' && isRecord(data.content_block)) mapResponseText({ content: [data.content_block] }, collect);
    if (type === 'message_start' && isRecord(data.message)) mapResponseText({ content: data.message.content ?? [] }, collect);
    // A tool_use block starts with `input: {}`: nothing to check until its JSON streams.
    return this.#whole(texts.filter((t) => t !== '{}'));
  }

  /** The events that end the stream once a check denied it; empty when the format is unknown. */
  terminal(hookResults: Json): string {
    switch (this.#format) {
      case 'chat':
      case 'completion': {
        const choice =
          this.#format === 'chat'
            ? { index: 0, delta: {}, finish_reason: 'content_filter' }
            : { index: 0, text: '', logprobs: null, finish_reason: 'content_filter' };
        const base = { ...this.#chunk, object: this.#format === 'chat' ? 'chat.completion.chunk' : 'text_completion' };
        // `choices: []` as in usage chunks, so code reading `chunk.choices[0]?.…` keeps working.
        return `data: ${JSON.stringify({ ...base, choices: [choice] })}\n\ndata: ${JSON.stringify({ ...base, choices: [], hook_results: hookResults })}\n\ndata: [DONE]\n\n`;
      }
      case 'responses': {
        // Built from the response as it started: no output, so no text of the answer, checked or not.
        const { output_text: _text, ...started } = this.#response ?? {};
        const response = { ...started, output: [], status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
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
