/**
 * Provider paths built from the client's: path parameters are checked and URL-encoded into the
 * provider's template, and a passthrough path is checked segment by segment, so that no value can
 * climb out of the provider's base path or smuggle in a query.
 */
import { ValidationError } from '../http/errors.ts';

const MAX_PARAM_LENGTH = 512;
const UNSAFE = /[/\\\u0000-\u001f\u007f]/;

/** Checks the route's path parameters (already percent-decoded by the router). */
export function checkPathParams(names: readonly string[], raw: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = raw[name] ?? '';
    if (value === '' || value === '.' || value === '..' || value.length > MAX_PARAM_LENGTH || UNSAFE.test(value)) {
      throw ValidationError.field(name, `must be an id of at most ${MAX_PARAM_LENGTH} characters without slashes, control characters or dot segments`);
    }
    out[name] = value;
  }
  return out;
}

/** `/files/{file_id}/content` with `file_id` filled in, URL-encoded. */
export function fillPath(template: string, params: Readonly<Record<string, string>>): string {
  return template.replace(/\{([A-Za-z0-9_]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`path template ${template} needs ${name}`);
    return encodeURIComponent(value);
  });
}

/**
 * The passthrough path below `/v1`, as the client encoded it. Dot segments, also percent-encoded
 * ones and ones hidden behind an encoded slash or backslash, are refused.
 */
export function checkProxyPath(rawPath: string): string {
  for (const segment of rawPath.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw ValidationError.field('path', 'is not a valid percent-encoded path');
    }
    if (/[\u0000-\u001f\u007f]/.test(decoded) || decoded.split(/[/\\]/).some((part) => part === '.' || part === '..')) {
      throw ValidationError.field('path', 'must not contain dot segments or control characters');
    }
  }
  return rawPath;
}
