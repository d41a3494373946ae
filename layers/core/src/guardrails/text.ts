/**
 * The text a model reads and the text it writes, one definition per dialect, used by every check
 * and every mutator: extraction and rewriting walk the same places, so a redaction reaches exactly
 * the text a check saw.
 *
 * Read (requests): every caller-controlled text by default (scope `all`): each message of a chat
 * (system, developer, earlier turns, assistant turns written by the client, tool results, the
 * client's tool-call arguments, refusals), tool descriptions, a completion's prompt and suffix, an
 * embedding's input, a Responses request's instructions, input items (messages, function and tool
 * call outputs, reasoning summaries) and prompt variables. A hook may narrow its scope to
 * `last_user`: the last user turn only. Written (answers): content, refusals, tool-call names and
 * arguments, and reasoning text where returned, in chat, completions, Responses and Anthropic's
 * shapes. Text only: images and audio are not read.
 */
import type { EndpointType } from '../providers/types.ts';

import type { TextPart, TextScope } from '../kernel/guardrails.ts';

export type { TextPart, TextScope };

/** Rewrites one text; called in reading order, with the role the text speaks in. */
export type TextVisit = (text: string, role: string) => string;

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Copy-on-write helpers: an object or array is copied only when one of its texts changed. */
function setKey(obj: Json, key: string, value: unknown): Json {
  return obj[key] === value ? obj : { ...obj, [key]: value };
}

function mapArray(items: readonly unknown[], fn: (item: unknown, i: number) => unknown): unknown[] {
  let out: unknown[] | undefined;
  items.forEach((item, i) => {
    const next = fn(item, i);
    if (next !== item) (out ??= [...items])[i] = next;
  });
  return out ?? (items as unknown[]);
}

/** `obj` with its text at `key` visited (when that is a string). */
const mapKey = (obj: Json, key: string, role: string, visit: TextVisit): Json => (typeof obj[key] === 'string' ? setKey(obj, key, visit(obj[key], role)) : obj);

const mapString = (v: unknown, role: string, visit: TextVisit): unknown => (typeof v === 'string' ? visit(v, role) : v);

/** A string, or an array whose strings are texts (prompts, embedding inputs). */
const mapStrings = (v: unknown, role: string, visit: TextVisit): unknown =>
  typeof v === 'string' ? visit(v, role) : Array.isArray(v) ? mapArray(v, (x) => mapString(x, role, visit)) : v;

/** Text keys of content parts: `text` (chat, Responses input_text/output_text, Anthropic), `refusal`. */
function mapContent(content: unknown, role: string, visit: TextVisit): unknown {
  if (typeof content === 'string') return visit(content, role);
  if (!Array.isArray(content)) return content;
  return mapArray(content, (part) => {
    if (!isRecord(part)) return part;
    let out = part;
    if (typeof part.text === 'string') out = setKey(out, 'text', visit(part.text, role));
    if (typeof part.refusal === 'string') out = setKey(out, 'refusal', visit(part.refusal, role));
    return out;
  });
}

/** A tool call's arguments (and name), as the client or the model wrote them. */
function mapFunction(fn: unknown, role: string, visit: TextVisit, names: boolean): unknown {
  if (!isRecord(fn)) return fn;
  let out = fn;
  if (names && typeof fn.name === 'string') out = setKey(out, 'name', visit(fn.name, role));
  if (typeof fn.arguments === 'string') out = setKey(out, 'arguments', visit(fn.arguments, role));
  return out;
}

function mapToolCalls(calls: unknown, role: string, visit: TextVisit, names: boolean): unknown {
  return Array.isArray(calls) ? mapArray(calls, (c) => (isRecord(c) ? setKey(c, 'function', mapFunction(c.function, role, visit, names)) : c)) : calls;
}

/** A chat message (request or answer): content, refusal, tool calls, reasoning. */
function mapMessage(m: Json, visit: TextVisit, names: boolean): Json {
  const role = typeof m.role === 'string' ? m.role : 'user';
  let out = setKey(m, 'content', mapContent(m.content, role, visit));
  if (typeof m.refusal === 'string') out = setKey(out, 'refusal', visit(m.refusal, role));
  if (m.tool_calls !== undefined) out = setKey(out, 'tool_calls', mapToolCalls(m.tool_calls, role, visit, names));
  if (m.function_call !== undefined) out = setKey(out, 'function_call', mapFunction(m.function_call, role, visit, names));
  for (const k of ['reasoning_content', 'reasoning'] as const) if (typeof m[k] === 'string') out = setKey(out, k, visit(m[k], role));
  return out;
}

/** The index of the last item whose role is `user`, or -1. */
function lastUserIndex(items: readonly unknown[]): number {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (isRecord(item) && item.role === 'user') return i;
  }
  return -1;
}

function mapMessages(messages: readonly unknown[], visit: TextVisit, scope: TextScope): unknown[] {
  const only = scope === 'last_user' ? lastUserIndex(messages) : undefined;
  return mapArray(messages, (m, i) => (isRecord(m) && (only === undefined || only === i) ? mapMessage(m, visit, false) : m));
}

/** Tool definitions' descriptions: text the model reads too. */
function mapTools(tools: unknown, visit: TextVisit): unknown {
  if (!Array.isArray(tools)) return tools;
  return mapArray(tools, (t) => {
    if (!isRecord(t)) return t;
    if (isRecord(t.function)) return setKey(t, 'function', mapKey(t.function, 'description', 'tool', visit));
    return mapKey(t, 'description', 'tool', visit);
  });
}

/** A Responses input item: a message, a tool call or its output, a reasoning item. */
function mapResponseItem(item: unknown, visit: TextVisit, names: boolean): unknown {
  if (!isRecord(item)) return item;
  const type = typeof item.type === 'string' ? item.type : 'message';
  if (type === 'message' || item.role !== undefined) return mapMessage(item, visit, names);
  if (type.endsWith('_call_output')) {
    return typeof item.output === 'string'
      ? setKey(item, 'output', visit(item.output, 'tool'))
      : setKey(item, 'output', mapContent(item.output, 'tool', visit));
  }
  let out = item;
  if (names && typeof item.name === 'string') out = setKey(out, 'name', visit(item.name, 'assistant'));
  for (const k of ['arguments', 'input'] as const) if (typeof item[k] === 'string') out = setKey(out, k, visit(item[k], 'assistant'));
  for (const k of ['summary', 'content'] as const) if (Array.isArray(item[k])) out = setKey(out, k, mapContent(item[k], 'assistant', visit));
  return out;
}

function mapPromptVariables(prompt: unknown, visit: TextVisit): unknown {
  if (!isRecord(prompt) || !isRecord(prompt.variables)) return prompt;
  const vars = prompt.variables;
  let out: Json | undefined;
  for (const [k, v] of Object.entries(vars)) {
    const next = typeof v === 'string' ? visit(v, 'user') : isRecord(v) && typeof v.text === 'string' ? setKey(v, 'text', visit(v.text, 'user')) : v;
    if (next !== v) (out ??= { ...vars })[k] = next;
  }
  return out ? { ...prompt, variables: out } : prompt;
}

function mapResponsesRequest(json: Json, visit: TextVisit, scope: TextScope): Json {
  if (scope === 'last_user') {
    if (!Array.isArray(json.input)) return setKey(json, 'input', mapStrings(json.input, 'user', visit));
    const at = lastUserIndex(json.input);
    return setKey(
      json,
      'input',
      mapArray(json.input, (item, i) => (i === at && isRecord(item) ? mapMessage(item, visit, false) : item)),
    );
  }
  let out = mapKey(json, 'instructions', 'system', visit);
  out = setKey(out, 'prompt', mapPromptVariables(json.prompt, visit));
  const input = Array.isArray(json.input) ? mapArray(json.input, (item) => mapResponseItem(item, visit, false)) : mapStrings(json.input, 'user', visit);
  out = setKey(out, 'input', input);
  return setKey(out, 'tools', mapTools(json.tools, visit));
}

function mapChatRequest(json: Json, visit: TextVisit, scope: TextScope): Json {
  if (!Array.isArray(json.messages)) return json;
  const out = setKey(json, 'messages', mapMessages(json.messages, visit, scope));
  return scope === 'all' ? setKey(out, 'tools', mapTools(json.tools, visit)) : out;
}

/**
 * The request with each text `visit` returns in its place (the same object when nothing changed),
 * or undefined when requests of this type carry no text guardrails read.
 */
export function mapRequestText(type: EndpointType, json: Readonly<Json>, visit: TextVisit, scope: TextScope = 'all'): Json | undefined {
  const j = json as Json;
  switch (type) {
    case 'chatComplete':
      return Array.isArray(j.messages) ? mapChatRequest(j, visit, scope) : undefined;
    case 'complete': {
      const out = setKey(j, 'prompt', mapStrings(j.prompt, 'user', visit));
      return scope === 'all' ? mapKey(out, 'suffix', 'user', visit) : out;
    }
    case 'embed':
    case 'moderate':
      return setKey(j, 'input', mapStrings(j.input, 'user', visit));
    case 'createModelResponse':
      return mapResponsesRequest(j, visit, scope);
    default:
      return undefined;
  }
}

/** Every text of the request in reading order, each with its role. */
export function requestParts(type: EndpointType, json: Readonly<Json>, scope: TextScope = 'all'): TextPart[] {
  const parts: TextPart[] = [];
  mapRequestText(
    type,
    json,
    (text, role) => {
      if (text !== '') parts.push({ role, text });
      return text;
    },
    scope,
  );
  return parts;
}

/** The request's text as one string (its parts joined by new lines). */
export function requestText(type: EndpointType, json: Readonly<Json>, scope: TextScope = 'all'): string {
  return requestParts(type, json, scope)
    .map((p) => p.text)
    .join('\n');
}

/** An Anthropic content block of an answer: text, tool use (name and input), thinking. */
function mapAnthropicBlock(block: unknown, visit: TextVisit): unknown {
  if (!isRecord(block)) return block;
  let out = block;
  if (typeof block.text === 'string') out = setKey(out, 'text', visit(block.text, 'assistant'));
  if (typeof block.thinking === 'string') out = setKey(out, 'thinking', visit(block.thinking, 'assistant'));
  if (block.type === 'tool_use' || block.type === 'server_tool_use') {
    if (typeof block.name === 'string') out = setKey(out, 'name', visit(block.name, 'assistant'));
    if (block.input !== undefined) {
      const raw = JSON.stringify(block.input);
      const next = visit(raw, 'assistant');
      if (next !== raw) out = setKey(out, 'input', parseOr(next));
    }
  }
  return out;
}

/** A rewritten tool input stays JSON when it still parses (a redaction inside a string value). */
function parseOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function mapChoice(c: unknown, visit: TextVisit): unknown {
  if (!isRecord(c)) return c;
  if (isRecord(c.message)) return setKey(c, 'message', mapMessage(c.message, visitAs(visit), true));
  return typeof c.text === 'string' ? setKey(c, 'text', visit(c.text, 'assistant')) : c;
}

/** Answers speak as the assistant whatever role their message names. */
const visitAs =
  (visit: TextVisit): TextVisit =>
  (text) =>
    visit(text, 'assistant');

/**
 * The answer with each text `visit` returns in its place (the same object when nothing changed), in
 * chat, completions, Responses and Anthropic's shapes; undefined for other shapes.
 */
export function mapResponseText(json: unknown, visit: TextVisit): unknown {
  if (!isRecord(json)) return undefined;
  if (Array.isArray(json.choices))
    return setKey(
      json,
      'choices',
      mapArray(json.choices, (c) => mapChoice(c, visit)),
    );
  if (Array.isArray(json.output)) {
    // `output_text` is a convenience copy of the output's text: rewritten from it, never checked twice.
    const output = mapArray(json.output, (item) => mapResponseItem(item, visitAs(visit), true));
    const out = setKey(json, 'output', output);
    return output !== json.output && typeof json.output_text === 'string' ? { ...out, output_text: outputText(output) } : out;
  }
  if (typeof json.output_text === 'string') return setKey(json, 'output_text', visit(json.output_text, 'assistant'));
  if (Array.isArray(json.content))
    return setKey(
      json,
      'content',
      mapArray(json.content, (b) => mapAnthropicBlock(b, visit)),
    );
  return undefined;
}

function outputText(output: readonly unknown[]): string {
  const texts: string[] = [];
  for (const item of output) {
    if (!isRecord(item) || item.type !== 'message' || !Array.isArray(item.content)) continue;
    for (const part of item.content) if (isRecord(part) && part.type === 'output_text' && typeof part.text === 'string') texts.push(part.text);
  }
  return texts.join('');
}

/** The answer's text: every choice, output item or content block, joined by new lines. */
export function responseText(json: unknown): string {
  const texts: string[] = [];
  mapResponseText(json, (text) => {
    if (text !== '') texts.push(text);
    return text;
  });
  return texts.join('\n');
}
