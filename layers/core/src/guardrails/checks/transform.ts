/**
 * Rewriting the text a check reads, for the mutators: in the request, the turn `request.text`
 * comes from (the last user message, the prompt, the input); in the answer, every choice's
 * content. A copy is returned; the context's JSON is never changed in place.
 */
import type { EndpointType } from '../../providers/types.ts';
import { isRecord } from './params.ts';

export type TextMap = (text: string) => string;

/** A message content with `fn` applied to its text (a string, or each text part). */
export function mapContent(content: unknown, fn: TextMap): unknown {
  if (typeof content === 'string') return fn(content);
  if (!Array.isArray(content)) return content;
  return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? { ...part, text: fn(part.text) } : part));
}

function mapLastUser(items: readonly unknown[], fn: TextMap): unknown[] {
  const out = [...items];
  for (let i = out.length - 1; i >= 0; i--) {
    const item = out[i];
    if (isRecord(item) && item.role === 'user') {
      out[i] = { ...item, content: mapContent(item.content, fn) };
      break;
    }
  }
  return out;
}

const mapJoined = (v: unknown, fn: TextMap): unknown =>
  typeof v === 'string' ? fn(v) : Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? fn(x) : x)) : v;

/** The request with its checked text rewritten, or undefined when its type carries no text. */
export function mapRequestText(type: EndpointType, json: Readonly<Record<string, unknown>>, fn: TextMap): Record<string, unknown> | undefined {
  switch (type) {
    case 'chatComplete':
      return Array.isArray(json.messages) ? { ...json, messages: mapLastUser(json.messages, fn) } : undefined;
    case 'complete':
      return { ...json, prompt: mapJoined(json.prompt, fn) };
    case 'embed':
    case 'moderate':
      return { ...json, input: mapJoined(json.input, fn) };
    case 'createModelResponse':
      return { ...json, input: Array.isArray(json.input) ? mapLastUser(json.input, fn) : mapJoined(json.input, fn) };
    default:
      return undefined;
  }
}

/** A chat or text completion answer with every choice's text rewritten; undefined for other shapes. */
export function mapResponseText(json: unknown, fn: TextMap): unknown {
  if (!isRecord(json) || !Array.isArray(json.choices)) return undefined;
  const choices = json.choices.map((c: unknown) => {
    if (!isRecord(c)) return c;
    if (isRecord(c.message)) return { ...c, message: { ...c.message, content: mapContent(c.message.content, fn) } };
    if (typeof c.text === 'string') return { ...c, text: fn(c.text) };
    return c;
  });
  return { ...json, choices };
}
