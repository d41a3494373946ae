/**
 * The text of OpenAI Realtime API events as guardrails read it (docs/realtime.md, "Guardrails").
 * Client events: the text the model will read, with its role (message text parts and transcripts
 * of any role, function call outputs and arguments, instructions, tool descriptions, prompt
 * variables). Provider events: the text the model wrote, either a piece of one part (`*.delta`)
 * or whole parts that events such as `*.done`, `response.output_item.done` and `response.done`
 * repeat. Audio is not text: it is never read.
 */
import type { TextPart, TextScope } from './text.ts';

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

// ---- What the client sends -------------------------------------------------------------------

const part = (role: string, text: string): TextPart[] => (text === '' ? [] : [{ role, text }]);

/** Text parts (`input_text`, `text`, `output_text`) and transcripts of an item's content. */
function contentTexts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content.flatMap((p) => (isRecord(p) ? [str(p.text), str(p.transcript)] : []));
}

/** Every text of a conversation item a client writes: any role's message, a tool's output, a call. */
function itemParts(item: unknown): TextPart[] {
  if (!isRecord(item)) return [];
  if (item.type === 'function_call_output') return part('tool', str(item.output));
  if (item.type === 'function_call') return [...part('assistant', str(item.name)), ...part('assistant', str(item.arguments))];
  const role = str(item.role) || 'user';
  return contentTexts(item.content).flatMap((t) => part(role, t));
}

/** A prompt's string variables (and input_text parts given as variables). */
function promptParts(prompt: unknown): TextPart[] {
  if (!isRecord(prompt) || !isRecord(prompt.variables)) return [];
  return Object.values(prompt.variables).flatMap((v) => part('user', isRecord(v) ? str(v.text) : str(v)));
}

/** Tool descriptions: text the model reads too. */
function toolParts(tools: unknown): TextPart[] {
  return Array.isArray(tools) ? tools.flatMap((t) => (isRecord(t) ? part('tool', str(t.description)) : [])) : [];
}

/** The last user message among items (scope `last_user`). */
function lastUser(items: readonly unknown[]): TextPart[] {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (isRecord(item) && item.role === 'user') return itemParts(item);
  }
  return [];
}

/**
 * The texts the model will read from one client event, each with its role; none for events that
 * carry no text (audio, commits, cancels). Scope `last_user` narrows them to the event's last user
 * message.
 */
export function clientEventParts(event: Json, scope: TextScope = 'all'): TextPart[] {
  switch (event.type) {
    case 'conversation.item.create':
      return scope === 'all' ? itemParts(event.item) : lastUser([event.item]);
    case 'response.create': {
      const r = event.response;
      if (!isRecord(r)) return [];
      const input = Array.isArray(r.input) ? r.input : [];
      if (scope === 'last_user') return lastUser(input);
      return [...part('system', str(r.instructions)), ...toolParts(r.tools), ...input.flatMap(itemParts), ...promptParts(r.prompt)];
    }
    case 'session.update': {
      const s = event.session;
      if (!isRecord(s) || scope === 'last_user') return [];
      return [...part('system', str(s.instructions)), ...toolParts(s.tools), ...promptParts(s.prompt)];
    }
    default:
      return [];
  }
}

/** The same texts joined by new lines ('' when there are none). */
export function clientEventText(event: Json, scope: TextScope = 'all'): string {
  return joinParts(clientEventParts(event, scope));
}

export const joinParts = (parts: readonly TextPart[]): string => parts.map((p) => p.text).join('\n');

// ---- What the model sends --------------------------------------------------------------------

/** Some text of one part the model writes, keyed `<item id>/<content index>` or `<item id>/arguments`. */
export interface PartText {
  part: string;
  text: string;
}

/** A provider event's text: a piece added to one part, or whole parts it repeats. */
export type ModelText = { delta: PartText } | { whole: PartText[] };

/** Delta events: the part they add to. */
const DELTAS: Readonly<Record<string, 'content' | 'arguments'>> = {
  'response.text.delta': 'content',
  'response.output_text.delta': 'content',
  'response.audio_transcript.delta': 'content',
  'response.output_audio_transcript.delta': 'content',
  'response.function_call_arguments.delta': 'arguments',
  'response.mcp_call_arguments.delta': 'arguments',
};

/** Events that end one part: the field that repeats its whole text. */
const DONES: Readonly<Record<string, { field: string; of: 'content' | 'arguments' }>> = {
  'response.text.done': { field: 'text', of: 'content' },
  'response.output_text.done': { field: 'text', of: 'content' },
  'response.audio_transcript.done': { field: 'transcript', of: 'content' },
  'response.output_audio_transcript.done': { field: 'transcript', of: 'content' },
  'response.function_call_arguments.done': { field: 'arguments', of: 'arguments' },
  'response.mcp_call_arguments.done': { field: 'arguments', of: 'arguments' },
};

/** Events that carry one whole item. */
const ITEM_EVENTS = new Set([
  'response.output_item.added',
  'response.output_item.done',
  'conversation.item.created',
  'conversation.item.added',
  'conversation.item.done',
  'conversation.item.retrieved',
]);

const partKey = (itemId: unknown, of: 'content' | 'arguments' | 'name', index?: unknown): string =>
  `${str(itemId) || '?'}/${of === 'content' ? String(typeof index === 'number' ? index : 0) : of}`;

/** An item the model writes: an assistant message, a function or MCP call. */
export function isModelItem(item: unknown): boolean {
  return isRecord(item) && (item.role === 'assistant' || item.type === 'function_call' || item.type === 'mcp_call');
}

/**
 * The parts of an item the model wrote: an assistant message's text and transcripts, a function
 * or MCP call's name and arguments. A user's or system's message, and a tool's output, are the
 * client's (input guardrails read those).
 */
export function modelItemParts(item: unknown, fallbackId = ''): PartText[] {
  if (!isRecord(item)) return [];
  const id = str(item.id) || fallbackId;
  if (item.type === 'message' || (item.type === undefined && item.role !== undefined)) {
    if (item.role !== 'assistant' || !Array.isArray(item.content)) return [];
    return item.content.flatMap((c, i) => (isRecord(c) ? [{ part: partKey(id, 'content', i), text: str(c.text) || str(c.transcript) }] : []));
  }
  if (item.type === 'function_call' || item.type === 'mcp_call') {
    return [
      { part: partKey(id, 'name'), text: str(item.name) },
      { part: partKey(id, 'arguments'), text: str(item.arguments) },
    ];
  }
  return [];
}

/** The text a provider event carries that the model wrote; undefined for every other event (audio, status, errors). */
export function providerEventText(event: Json): ModelText | undefined {
  const type = str(event.type);
  const delta = DELTAS[type];
  if (delta) return { delta: { part: partKey(event.item_id, delta, event.content_index), text: str(event.delta) } };
  const done = DONES[type];
  if (done) return { whole: [{ part: partKey(event.item_id, done.of, event.content_index), text: str(event[done.field]) }] };
  if (type === 'response.content_part.added' || type === 'response.content_part.done') {
    const c = isRecord(event.part) ? event.part : {};
    return { whole: [{ part: partKey(event.item_id, 'content', event.content_index), text: str(c.text) || str(c.transcript) }] };
  }
  if (ITEM_EVENTS.has(type)) return { whole: modelItemParts(event.item) };
  if (type === 'response.done' || type === 'response.created') {
    const output = isRecord(event.response) && Array.isArray(event.response.output) ? event.response.output : [];
    return { whole: output.flatMap((item, i) => modelItemParts(item, `output_${i}`)) };
  }
  return undefined;
}

/**
 * What the model wrote that was not read before, event by event: a delta adds its text; an event
 * that repeats a whole part adds only what its deltas did not already say (all of it when it
 * differs from them). Parts are separated by a line break, so two parts never join into one word.
 */
export class ModelTextTracker {
  readonly #seen = new Map<string, string>();
  #last: string | undefined;

  /** The new text of an event ('' when it adds none). */
  added(event: Json): string {
    const found = providerEventText(event);
    if (!found) return '';
    if ('delta' in found) return this.#add(found.delta.part, found.delta.text, true);
    let out = '';
    for (const p of found.whole) out += this.#add(p.part, p.text, false);
    return out;
  }

  /** Forgets the parts read so far (a response ended: its parts are not repeated after). */
  reset(): void {
    this.#seen.clear();
    this.#last = undefined;
  }

  #add(part: string, text: string, isDelta: boolean): string {
    const before = this.#seen.get(part) ?? '';
    let fresh: string;
    if (isDelta) fresh = text;
    else if (before.startsWith(text)) return '';
    else fresh = text.startsWith(before) ? text.slice(before.length) : text;
    if (fresh === '') return '';
    const continues = this.#last === part && (isDelta || text.startsWith(before));
    this.#seen.set(part, isDelta ? before + text : text);
    const separator = this.#last !== undefined && !continues ? '\n' : '';
    this.#last = part;
    return separator + fresh;
  }
}
