/**
 * A batch's input file, read line by line from blob storage (never whole), and the checks a line
 * must pass before any line runs: OpenAI's line shape (`{custom_id, method, url, body}`, custom_id
 * unique), the batch's endpoint, a batchable endpoint, and the endpoint's own body validation.
 * The upload only made sure the file is lines of UTF-8 (gateway/files/batch-lines.ts): what the
 * lines say is judged here, when a batch is created on the file, as OpenAI's API does.
 */
import { createInterface } from 'node:readline';
import type { CoreDeps } from '../deps.ts';
import type { EndpointSpec } from '../gateway/endpoint.ts';
import { ValidationError } from '../http/errors.ts';
import { isRecord, tryParseJson } from '../http/json.ts';
import type { BatchLineError } from '../store/batches.ts';
import { BATCHABLE_ENDPOINTS } from './batchable.ts';

export interface InputLine {
  index: number;
  custom_id: string;
  url: string;
  body: Record<string, unknown>;
}

/** At most this many problems are reported (and counted) in `errors.data`. */
const MAX_REPORTED = 1000;

/** The raw text of each line, with its 0-based index. */
export async function* inputLines(deps: CoreDeps, blobKey: string): AsyncGenerator<{ index: number; text: string }> {
  const stream = await deps.blobs.getStream(blobKey);
  if (!stream) return;
  let index = 0;
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  try {
    for await (const text of lines) {
      // A byte order mark some editors write is not part of the first line's JSON.
      yield { index, text: index === 0 ? text.replace(/^\uFEFF/, '') : text };
      index++;
    }
  } finally {
    lines.close();
    stream.destroy();
  }
}

/** The endpoint specs of the batchable endpoints, from the gateway's routes (imported on first use). */
let specs: Promise<Map<string, EndpointSpec>> | undefined;
export function batchableSpecs(): Promise<Map<string, EndpointSpec>> {
  specs ??= import('../gateway/routes.ts').then(({ GATEWAY_ROUTES }) => {
    const out = new Map<string, EndpointSpec>();
    for (const r of GATEWAY_ROUTES)
      if ((BATCHABLE_ENDPOINTS as readonly string[]).includes(`/v1${r.path}`) && r.spec.method === 'POST') out.set(`/v1${r.path}`, r.spec);
    return out;
  });
  return specs;
}

/** The line's shape problem (the first one), or undefined when it is `{custom_id, method: "POST", url, body}`. */
function lineProblem(value: unknown): { param: string | null; message: string } | undefined {
  if (!isRecord(value)) return { param: null, message: 'The line is not a JSON object.' };
  if (typeof value.custom_id !== 'string' || value.custom_id === '') return { param: 'custom_id', message: "The line's custom_id must be a non-empty string." };
  if (value.method !== 'POST') return { param: 'method', message: 'The line\'s method must be "POST".' };
  if (typeof value.url !== 'string' || !value.url.startsWith('/v1/'))
    return { param: 'url', message: "The line's url must be a /v1/ path, e.g. /v1/chat/completions." };
  if (!isRecord(value.body)) return { param: 'body', message: "The line's body must be a JSON object." };
  return undefined;
}

/** A line's verdict; a bad line keeps its custom_id when it has one, for its error-file line. */
export type LineCheck = { ok: true; line: InputLine } | { ok: false; custom_id: string | null; error: Omit<BatchLineError, 'line'> };

const bad = (value: unknown, code: string, message: string, param: string | null): LineCheck => ({
  ok: false,
  custom_id: isRecord(value) && typeof value.custom_id === 'string' && value.custom_id !== '' ? value.custom_id : null,
  error: { code, message, param },
});

function checkLine(text: string, index: number, endpoint: string, spec: EndpointSpec | undefined, seen: Map<string, number>): LineCheck {
  if (text.trim() === '') return bad(undefined, 'empty_line', 'The line is empty.', null);
  const parsed = tryParseJson(text);
  if (!parsed.ok) return bad(undefined, 'invalid_json_line', 'The line is not valid JSON.', null);
  const problem = lineProblem(parsed.value);
  if (problem) return bad(parsed.value, 'invalid_request', problem.message, problem.param);
  const value = parsed.value as { custom_id: string; url: string; body: Record<string, unknown> };
  if (value.url !== endpoint) return bad(value, 'mismatched_endpoint', `The line's url ${value.url} is not the batch's endpoint ${endpoint}.`, 'url');
  if (!spec) return bad(value, 'invalid_url', `${value.url} cannot be batched; use one of ${BATCHABLE_ENDPOINTS.join(', ')}.`, 'url');
  const first = seen.get(value.custom_id);
  if (first !== undefined)
    return bad(value, 'duplicate_custom_id', `custom_id ${JSON.stringify(value.custom_id)} is already used on line ${first + 1}.`, 'custom_id');
  seen.set(value.custom_id, index);
  if (value.body.stream === true) return bad(value, 'invalid_request', 'A batch line cannot stream.', 'body.stream');
  try {
    spec.validate?.(value.body);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    const first = err.problems?.[0];
    return bad(value, 'invalid_request', err.message, first?.path ? `body.${first.path}` : 'body');
  }
  return { ok: true, line: { index, custom_id: value.custom_id, url: value.url, body: value.body } };
}

/** Every line of the file with its verdict, in order (the same verdicts on every read). */
export async function* checkedLines(deps: CoreDeps, blobKey: string, endpoint: string): AsyncGenerator<{ index: number; check: LineCheck }> {
  const spec = (await batchableSpecs()).get(endpoint);
  const seen = new Map<string, number>();
  for await (const { index, text } of inputLines(deps, blobKey)) yield { index, check: checkLine(text, index, endpoint, spec, seen) };
}

/** Every line checked: the number of lines, and each bad line's problem (1-based `line`, the first MAX_REPORTED). */
export async function validateInput(deps: CoreDeps, blobKey: string, endpoint: string): Promise<{ total: number; errors: BatchLineError[] }> {
  const errors: BatchLineError[] = [];
  let total = 0;
  for await (const { index, check } of checkedLines(deps, blobKey, endpoint)) {
    total = index + 1;
    if (!check.ok && errors.length < MAX_REPORTED) errors.push({ ...check.error, line: index + 1 });
  }
  if (total === 0) errors.push({ code: 'empty_file', message: 'The input file has no lines.', param: 'input_file_id', line: null });
  return { total, errors };
}

/** The lines with index in [start, end), parsed (they passed validateInput when the batch started). */
export async function readRange(deps: CoreDeps, blobKey: string, start: number, end: number): Promise<InputLine[]> {
  const out: InputLine[] = [];
  for await (const { index, text } of inputLines(deps, blobKey)) {
    if (index < start) continue;
    if (index >= end) break;
    const v = JSON.parse(text) as { custom_id: string; url: string; body: Record<string, unknown> };
    out.push({ index, custom_id: v.custom_id, url: v.url, body: v.body });
  }
  return out;
}
