/**
 * The text input hooks read of requests in a provider's own format, which the gateway passes on
 * rather than translates: the passthrough, the assistants family and file uploads of batch lines.
 * Conservative where the format is unknown: a passthrough body is read as every string it holds
 * (keys and values, at any depth, JSON escapes undone, duplicate keys included) and, when it is
 * not JSON, as the text it is, so whatever part a provider reads was checked. Text only: images
 * and audio are not read.
 */
import { GantryError } from '../http/errors.ts';
import { isRecord, tryParseJson } from '../http/json.ts';
import type { EndpointType } from '../providers/types.ts';
import { lenientSegments } from './paths.ts';
import type { ProviderRequestBody } from './request-body.ts';
import { requestParts, type TextPart } from '../guardrails/text.ts';

type Json = Record<string, unknown>;

/** The most text one request gives the hooks; past it the request is refused, never sent unchecked. */
export const MAX_CHECKED_TEXT = 64 << 20;

const tooLarge = (): GantryError =>
  new GantryError(
    413,
    'AB01',
    'invalid_request_error',
    `The request carries more than ${MAX_CHECKED_TEXT >> 20} MiB of text, more than the input hooks check`,
    {
      openaiCode: 'request_too_large',
      param: null,
    },
  );

/** Collects parts, refusing the request once their text passes MAX_CHECKED_TEXT. */
class Parts {
  readonly list: TextPart[] = [];
  #size = 0;

  add(role: string, text: string): void {
    if (text === '') return;
    this.#size += text.length;
    if (this.#size > MAX_CHECKED_TEXT) throw tooLarge();
    this.list.push({ role, text });
  }

  addAll(parts: readonly TextPart[]): void {
    for (const p of parts) this.add(p.role, p.text);
  }
}

/** Every string value of a JSON value, at any depth (iterative: no depth limit to overflow). */
function addStrings(out: Parts, value: unknown, role = 'user'): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') out.add(role, v);
    else if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    else if (isRecord(v)) stack.push(...Object.values(v).reverse());
  }
}

/** A JSON string literal; linear: each attempt ends at the next quote or a bad escape. */
const STRING_LITERAL = /"(?:[^"\\]|\\[\s\S])*"/g;

/**
 * Every JSON string literal in a text, unescaped: the values and keys of a JSON body, also ones a
 * parser would drop (a duplicate key), of every JSON line, of JSON inside a multipart body.
 */
function addStringLiterals(out: Parts, text: string): void {
  for (const [literal] of text.matchAll(STRING_LITERAL)) {
    const parsed = tryParseJson(literal);
    out.add('user', parsed.ok && typeof parsed.value === 'string' ? parsed.value : literal.slice(1, -1));
  }
}

/** Messages (assistants threads, additional messages) as a chat request's messages are read. */
function addMessages(out: Parts, messages: unknown): void {
  if (Array.isArray(messages)) out.addAll(requestParts('chatComplete', { messages }));
}

/**
 * The assistants family's texts, wherever they stand in the family (so a path the provider reads
 * differently than the gateway does not hide one): a message's `content` (a string or parts'
 * `text`), a thread's `messages`, a run's `instructions`, `additional_instructions` and
 * `additional_messages`, tool outputs, and tools' descriptions.
 */
function addAssistantsTexts(out: Parts, json: Json): void {
  if (json.content !== undefined) addMessages(out, [{ role: typeof json.role === 'string' ? json.role : 'user', content: json.content }]);
  addMessages(out, json.messages);
  if (isRecord(json.thread)) addMessages(out, json.thread.messages);
  addMessages(out, json.additional_messages);
  for (const key of ['instructions', 'additional_instructions'] as const) if (typeof json[key] === 'string') out.add('system', json[key]);
  if (Array.isArray(json.tool_outputs)) for (const o of json.tool_outputs) if (isRecord(o) && typeof o.output === 'string') out.add('tool', o.output);
  if (Array.isArray(json.tools)) out.addAll(requestParts('chatComplete', { messages: [], tools: json.tools }));
}

const ASSISTANTS_ROOTS: ReadonlySet<string> = new Set(['assistants', 'threads']);

/** A path (below `/v1`) of the assistants family, however spelled. */
const isAssistantsPath = (path: string): boolean => ASSISTANTS_ROOTS.has(lenientSegments(path)[0] ?? '');

/** Texts of a body the gateway holds as text: every string literal in it, and the text itself unless it is JSON. */
function addBodyText(out: Parts, text: string): void {
  const parsed = tryParseJson(text);
  if (!parsed.ok) out.add('user', text);
  addStringLiterals(out, text);
}

/**
 * What input hooks read of a passthrough or assistants request, with roles: the assistants
 * family's texts (`path` below `/v1`, e.g. `/threads/{thread_id}/messages`), else every string of a
 * JSON value; `json` may also be the body's text (every string literal in it, and the text itself
 * when it is not JSON).
 */
export function proxyRequestParts(path: string, json: unknown): TextPart[] {
  const out = new Parts();
  if (typeof json === 'string') addBodyText(out, json);
  else if (isRecord(json) && isAssistantsPath(path)) addAssistantsTexts(out, json);
  else addStrings(out, json);
  return out.list;
}

/** `proxyRequestParts` as one text, parts joined by new lines. */
export function proxyRequestText(path: string, json: unknown): string {
  return joined(proxyRequestParts(path, json));
}

/** The endpoint a batch line's `url` names (read leniently, as a provider might), when its texts are known. */
const LINE_ENDPOINTS: ReadonlyMap<string, EndpointType> = new Map([
  ['v1/chat/completions', 'chatComplete'],
  ['v1/completions', 'complete'],
  ['v1/embeddings', 'embed'],
  ['v1/moderations', 'moderate'],
  ['v1/responses', 'createModelResponse'],
]);

const NEWLINE = 0x0a;
const OPEN_BRACE = 0x7b;
/** White space and a UTF-8 byte order mark, which JSON readers may skip before a line's object. */
const LEADING: ReadonlySet<number> = new Set([0x20, 0x09, 0x0d, 0xef, 0xbb, 0xbf]);

function opensObject(buf: Buffer, from: number, end: number): boolean {
  let i = from;
  while (i < end && LEADING.has(buf[i]!)) i++;
  return i < end && buf[i] === OPEN_BRACE;
}

/** The texts of one JSONL line when it is a batch request (`{custom_id, method, url, body}`). */
function addBatchLine(out: Parts, line: string): void {
  const parsed = tryParseJson(line.replace(/^[\s\uFEFF]+/, ''));
  if (!parsed.ok || !isRecord(parsed.value) || !isRecord(parsed.value.body)) return;
  const { url, body } = parsed.value;
  const endpoint = typeof url === 'string' ? LINE_ENDPOINTS.get(lenientSegments(url.split('?')[0] ?? '').join('/')) : undefined;
  if (endpoint) out.addAll(requestParts(endpoint, body));
  else addStrings(out, body);
}

/**
 * What input hooks read of an upload of batch lines: each JSONL line that is a batch request, its
 * `body` read as the endpoint its `url` names reads it (chat messages, a prompt, an input), any
 * other endpoint's body as every string in it. Takes the file or the whole multipart body: other
 * lines (part headers, other fields) are no batch request and give nothing.
 */
export function batchLinesParts(bytes: Uint8Array | string): TextPart[] {
  const out = new Parts();
  if (typeof bytes === 'string') {
    for (const line of bytes.split('\n')) addBatchLine(out, line);
    return out.list;
  }
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let from = 0; from < buf.length; ) {
    const nl = buf.indexOf(NEWLINE, from);
    const end = nl < 0 ? buf.length : nl;
    // Only a line that opens an object can be a batch request: no other line is decoded.
    if (opensObject(buf, from, end)) addBatchLine(out, buf.toString('utf8', from, end));
    from = end + 1;
  }
  return out.list;
}

/** `batchLinesParts` as one text, parts joined by new lines. */
export function batchLinesText(bytes: Uint8Array | string): string {
  return joined(batchLinesParts(bytes));
}

/**
 * The texts of a request in a provider's own format, for the check context (`request.parts`), or
 * undefined for the endpoints guardrails/text.ts reads: the passthrough's body (`json` is what
 * the gateway parsed of it, if anything; the body's bytes are read whatever their content type),
 * the assistants family's, and the batch lines of a file upload. `path` is the path below `/v1`
 * (the call's `subPath`).
 */
export function providerRequestParts(endpoint: EndpointType, path: string, body: ProviderRequestBody, json: unknown): TextPart[] | undefined {
  switch (endpoint) {
    case 'proxy':
      if (body.kind !== 'raw') return [];
      if (body.bytes.byteLength > MAX_CHECKED_TEXT) throw tooLarge();
      return proxyRequestParts(path, Buffer.from(body.bytes.buffer, body.bytes.byteOffset, body.bytes.byteLength).toString('utf8'));
    case 'assistants':
      return proxyRequestParts(path, body.kind === 'json' ? body.value : json);
    case 'uploadFile':
      return body.kind === 'raw' ? batchLinesParts(body.bytes) : [];
    default:
      return undefined;
  }
}

const joined = (parts: readonly TextPart[]): string => parts.map((p) => p.text).join('\n');
