/**
 * Reads a gateway request's body the way its endpoint takes it. JSON is parsed once and kept as the
 * client's text, so an unchanged body is sent without serialising it again; multipart and raw
 * bodies keep their exact bytes (a multipart body's boundary lives in its content type, which
 * travels with it).
 */
import { ValidationError } from '../http/errors.ts';
import { readBodyBytes, readBodyText } from '../http/bodies.ts';
import { isRecord, tryParseJson } from '../http/json.ts';
import type { BodyKind, FormSummary } from './endpoint.ts';

/** The body a provider receives. */
export type ProviderRequestBody =
  /** `rewritten`: a guardrail hook changed it for this target, so no dialect may send the client's original instead. */
  | { kind: 'json'; text: string; value: Record<string, unknown>; rewritten?: true }
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

/**
 * Body limits by kind, for endpoints that set none: JSON requests (chat with inline images
 * included), and uploads or passthrough bodies (OpenAI's own file limit is 512 MB).
 */
export const DEFAULT_BODY_LIMITS: Readonly<Record<BodyKind, number>> = {
  json: 32 << 20,
  multipart: 512 << 20,
  raw: 512 << 20,
  none: 0,
};

async function readJson(req: Request, optional: boolean, limit: number): Promise<ReadBody> {
  const text = await readBodyText(req, limit);
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

async function readMultipart(req: Request, limit: number): Promise<ReadBody> {
  const contentType = req.headers.get('content-type');
  if (!isMultipart(contentType)) {
    throw ValidationError.field('content-type', 'must be multipart/form-data with a boundary');
  }
  const bytes = await readBodyBytes(req, limit);
  const form = await summarise(bytes, contentType);
  return { body: { kind: 'raw', bytes, contentType }, params: { ...form.fields }, form };
}

/** Passthrough: any body, byte for byte; a JSON object body is also read for the record and routing. */
async function readRaw(req: Request, limit: number): Promise<ReadBody> {
  const bytes = await readBodyBytes(req, limit);
  if (bytes.length === 0) return NONE;
  const contentType = req.headers.get('content-type') ?? undefined;
  if (contentType && /[/+]json\b/i.test(contentType)) {
    const text = new TextDecoder().decode(bytes);
    const parsed = tryParseJson(text);
    if (parsed.ok && isRecord(parsed.value)) return { body: { kind: 'raw', bytes, contentType }, params: parsed.value };
  }
  return { body: { kind: 'raw', bytes, contentType } };
}

/** Reads the body as `kind` says, refusing one over `limit` (413) before or while it is read. */
export function readRequestBody(kind: BodyKind, req: Request, optional = false, limit = DEFAULT_BODY_LIMITS[kind]): Promise<ReadBody> {
  switch (kind) {
    case 'json':
      return readJson(req, optional, limit);
    case 'multipart':
      return readMultipart(req, limit);
    case 'raw':
      return readRaw(req, limit);
    default:
      return Promise.resolve(NONE);
  }
}
