/**
 * The text guardrails read: what the request asks (the last user turn, the prompt, the input) and
 * what the answer says, in every shape the gateway answers in (chat, completions, responses,
 * Anthropic's messages). Text only: images and audio are not read.
 */
import type { EndpointType } from '../providers/types.ts';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A message content: a string, or parts whose text is joined. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : ''))
    .filter((t) => t !== '')
    .join('\n');
}

function lastUserTurn(items: readonly unknown[]): string {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (isRecord(item) && item.role === 'user') return contentText(item.content);
  }
  return '';
}

const joined = (v: unknown): string => (typeof v === 'string' ? v : Array.isArray(v) ? v.filter((x) => typeof x === 'string').join('\n') : '');

export function requestText(requestType: EndpointType, json: Readonly<Record<string, unknown>>): string {
  switch (requestType) {
    case 'chatComplete':
      return Array.isArray(json.messages) ? lastUserTurn(json.messages) : '';
    case 'complete':
      return joined(json.prompt);
    case 'createModelResponse':
      return Array.isArray(json.input) ? lastUserTurn(json.input) : joined(json.input);
    case 'embed':
      return joined(json.input);
    default:
      return '';
  }
}

/** The answer's text: every choice (chat, completions), the output text (responses), the text blocks (Anthropic). */
export function responseText(json: unknown): string {
  if (!isRecord(json)) return '';
  if (Array.isArray(json.choices)) {
    return json.choices
      .map((c) => (isRecord(c) ? (isRecord(c.message) ? contentText(c.message.content) : typeof c.text === 'string' ? c.text : '') : ''))
      .join('\n');
  }
  if (typeof json.output_text === 'string') return json.output_text;
  if (Array.isArray(json.output)) {
    return json.output
      .map((item) => (isRecord(item) && item.type === 'message' ? contentText(item.content) : ''))
      .filter((t) => t !== '')
      .join('\n');
  }
  if (Array.isArray(json.content)) return contentText(json.content);
  return '';
}
