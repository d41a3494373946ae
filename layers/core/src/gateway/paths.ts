/**
 * Provider paths built from the client's: path parameters are checked and URL-encoded into the
 * provider's template, and a passthrough path is checked segment by segment, so that no value can
 * climb out of the provider's base path or smuggle in a query. And which spellings of a path
 * belong to a unified route (`pathOwner`), which the passthrough must never serve.
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

/** A path a unified route serves: its method and its OpenAI path below `/v1` (`{name}` is one segment, `{name+}` one or more). */
export interface OwnedPath {
  method: string;
  path: string;
}

/** How far nested percent-encoding is undone (`%2563` is `%63` is `c`). */
const MAX_DECODES = 4;

/** Decodes every valid escape; an invalid one (`%zz`, a broken UTF-8 sequence) stays as it is. */
function decodeOnce(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
  }
}

/** Case-folded the way lenient servers compare (`ſ` is `s`, `K` is `k`). */
const fold = (segment: string): string => segment.toUpperCase().toLowerCase();

/**
 * The segments of a path as the most lenient server may read it: percent-decoded until nothing
 * changes, in compatibility form, split at slashes and backslashes however encoded, without `;`
 * parameters, surrounding white space or empty segments, case-folded.
 */
export function lenientSegments(path: string): string[] {
  return decodedSegments(path).map(fold);
}

/** `lenientSegments` before case-folding. */
function decodedSegments(path: string): string[] {
  let decoded = path;
  for (let i = 0; i < MAX_DECODES && decoded.includes('%'); i++) {
    const next = decodeOnce(decoded);
    if (next === decoded) break;
    decoded = next;
  }
  const out: string[] = [];
  // Compatibility forms first (fullwidth `ｃ` is `c`, `／` a slash).
  for (const raw of decoded.normalize('NFKC').split(/[/\\]/)) {
    const segment = (raw.split(';')[0] ?? '').trim();
    if (segment !== '') out.push(segment);
  }
  return out;
}

interface Template {
  method: string;
  /** The route's own segments. */
  parts: string[];
  /** Literal segments case-folded; `undefined` for a parameter. */
  segments: Array<string | undefined>;
  /** The last parameter takes one or more segments. */
  greedy: boolean;
}

function compile(owned: OwnedPath): Template {
  const parts = owned.path.split('/').filter((s) => s !== '');
  const greedy = /^\{[A-Za-z0-9_]+\+\}$/.test(parts.at(-1) ?? '');
  return { method: owned.method, parts, segments: parts.map((p) => (/^\{[A-Za-z0-9_]+\+?\}$/.test(p) ? undefined : fold(p))), greedy };
}

function matches(t: Template, segments: readonly string[]): boolean {
  const n = t.segments.length;
  if (t.greedy ? segments.length < n : segments.length !== n) return false;
  return t.segments.every((literal, i) => literal === undefined || literal === segments[i]);
}

/** The template with the client's values (decoded, not folded) for its parameters (the greedy one takes the rest). */
function canonical(t: Template, segments: readonly string[]): string {
  const n = t.segments.length;
  const filled = t.segments.map((literal, i) => {
    if (literal !== undefined) return t.parts[i];
    const values = t.greedy && i === n - 1 ? segments.slice(i) : [segments[i] ?? ''];
    return values.map(encodeURIComponent).join('/');
  });
  return `/v1/${filled.join('/')}`;
}

/**
 * Finds the unified route a `/v1` path stands for when it differs from the route's own path only by
 * case, repeated or trailing slashes, percent-encoding, encoded slashes or `;` parameters (literal
 * segments compared case-insensitively, any value for a parameter), for the same method. Returns
 * the canonical path, or undefined when no route owns it: such a path is the passthrough's.
 */
export function pathOwner(owned: readonly OwnedPath[]): (method: string, path: string) => string | undefined {
  const templates = owned.map(compile);
  return (method, path) => {
    if (!path.startsWith('/v1/')) return undefined;
    const decoded = decodedSegments(path.slice(3));
    const segments = decoded.map(fold);
    const found = templates.find((t) => t.method === method && matches(t, segments));
    return found ? canonical(found, decoded) : undefined;
  };
}
