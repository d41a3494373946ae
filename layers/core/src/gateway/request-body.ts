/**
 * Reads a gateway request's body the way its endpoint takes it. JSON is parsed once and kept as the
 * client's text, so an unchanged body is sent without serialising it again; multipart and raw
 * bodies keep their exact bytes (a multipart body's boundary lives in its content type, which
 * travels with it).
 */
import { ValidationError } from '../http/errors.ts';
import { readBodyBytes, readBodyText } from '../http/bodies.ts';
import { tryParseJson } from '../http/json.ts';
import type { BodyKind } from './endpoint.ts';
import { isRecord } from './validate/common.ts';

/** A multipart form as validation sees it: text fields, and the files' names and sizes only. */
export interface FormSummary {
  fields: Record<string, string>;
  files: Record<string, Array<{ filename: string; size: number; type: string }>>;
}

/** The body a provider receives. */
export type ProviderRequestBody =
  | { kind: 'json'; text: string; value: Record<string, unknown> }
  | { kind: 'raw'; bytes: Uint8Array; contentType: string | undefined }
  | { kind: 'none' };

export interface ReadBody {
  body: ProviderRequestBody;
  /** What the record and routing conditions (`params.*`) see of the body. */
  params?: Record<string, unknown>;
  form?: FormSummary;
}

const NONE: ReadBody = { body: { kind: 'none' } };

export function invalidJson(): ValidationError {
  return new ValidationError([{ path: '', message: 'The request body is not valid JSON' }], { param: null, openaiCode: 'invalid_json' });
}

async function readJson(req: Request, optional: boolean): Promise<ReadBody> {
  const text = await readBodyText(req);
  if (optional && text.trim() === '') return NONE;
  const parsed = tryParseJson(text);
  if (!parsed.ok) throw invalidJson();
  if (!isRecord(parsed.value)) throw new ValidationError([{ path: '', message: 'request body must be a JSON object' }], { param: null });
  return { body: { kind: 'json', text, value: parsed.value }, params: parsed.value };
}

const isMultipart = (type: string | null): type is string => type !== null && /^multipart\/form-data\s*;/i.test(type);

async function summarise(bytes: Uint8Array, contentType: string): Promise<FormSummary> {
  let form: FormData;
  try {
    // The platform's own multipart parser; the bytes sent on stay the client's.
    form = await new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { 'content-type': contentType } }).formData();
  } catch {
    throw new ValidationError([{ path: '', message: 'The multipart body could not be parsed' }], { param: null, openaiCode: 'invalid_multipart' });
  }
  const summary: FormSummary = { fields: {}, files: {} };
  for (const [name, value] of form) {
    if (typeof value === 'string') summary.fields[name] = value;
    else (summary.files[name] ??= []).push({ filename: value.name, size: value.size, type: value.type });
  }
  return summary;
}

async function readMultipart(req: Request): Promise<ReadBody> {
  const contentType = req.headers.get('content-type');
  if (!isMultipart(contentType)) {
    throw ValidationError.field('content-type', 'must be multipart/form-data with a boundary');
  }
  const bytes = await readBodyBytes(req);
  const form = await summarise(bytes, contentType);
  return { body: { kind: 'raw', bytes, contentType }, params: { ...form.fields }, form };
}

/** Passthrough: any body, byte for byte; a JSON object body is also read for the record and routing. */
async function readRaw(req: Request): Promise<ReadBody> {
  const bytes = await readBodyBytes(req);
  if (bytes.length === 0) return NONE;
  const contentType = req.headers.get('content-type') ?? undefined;
  if (contentType && /[/+]json\b/i.test(contentType)) {
    const text = new TextDecoder().decode(bytes);
    const parsed = tryParseJson(text);
    if (parsed.ok && isRecord(parsed.value)) return { body: { kind: 'raw', bytes, contentType }, params: parsed.value };
  }
  return { body: { kind: 'raw', bytes, contentType } };
}

export function readRequestBody(kind: BodyKind, req: Request, optional = false): Promise<ReadBody> {
  switch (kind) {
    case 'json':
      return readJson(req, optional);
    case 'multipart':
      return readMultipart(req);
    case 'raw':
      return readRaw(req);
    default:
      return Promise.resolve(NONE);
  }
}
