/**
 * The allow-list on every path: listings show only the enabled tools, prompts, resources and
 * resource templates, and a call that names anything else (`tools/call`, `prompts/get`,
 * `resources/read`, subscriptions, completions) is answered with a JSON-RPC error here and never
 * reaches the upstream. Hidden and unknown names get the same answer, so a caller cannot probe
 * which hidden ones exist.
 */
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import { INVALID_PARAMS, rpcError, type JsonRpcError, type JsonRpcRequest } from './jsonrpc.ts';

/** Enabled capabilities by name (tools, prompts) and by URI or URI template (resources). */
export interface AllowList {
  tools: ReadonlySet<string>;
  prompts: ReadonlySet<string>;
  resources: ReadonlySet<string>;
}

export type TargetKind = 'tool' | 'prompt' | 'resource';

/** What a request acts on: the tool or prompt name, or the resource URI. */
export interface Target {
  kind: TargetKind;
  name: unknown;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export function targetOf(req: JsonRpcRequest): Target | undefined {
  const p = req.params ?? {};
  switch (req.method) {
    case 'tools/call':
      return { kind: 'tool', name: p.name };
    case 'prompts/get':
      return { kind: 'prompt', name: p.name };
    case 'resources/read':
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      return { kind: 'resource', name: p.uri };
    case 'completion/complete': {
      const ref = (p.ref ?? {}) as Record<string, unknown>;
      if (ref.type === 'ref/prompt') return { kind: 'prompt', name: ref.name };
      if (ref.type === 'ref/resource') return { kind: 'resource', name: ref.uri };
      return { kind: 'prompt', name: undefined };
    }
    default:
      return undefined;
  }
}

/** Templates are parsed once per process: the allow-list of a server changes rarely. */
const templates = new Map<string, UriTemplate | null>();
function templateOf(text: string): UriTemplate | null {
  let t = templates.get(text);
  if (t === undefined) {
    try {
      t = UriTemplate.isTemplate(text) ? new UriTemplate(text) : null;
    } catch {
      t = null;
    }
    if (templates.size > 10_000) templates.clear();
    templates.set(text, t);
  }
  return t;
}

/** A URI is allowed when it is enabled itself or matches an enabled resource template. */
export function resourceAllowed(uri: string, allowed: AllowList): boolean {
  if (allowed.resources.has(uri)) return true;
  for (const entry of allowed.resources) {
    if (templateOf(entry)?.match(uri)) return true;
  }
  return false;
}

export function isAllowed(target: Target, allowed: AllowList): boolean {
  const name = str(target.name);
  if (name === undefined) return false;
  if (target.kind === 'tool') return allowed.tools.has(name);
  if (target.kind === 'prompt') return allowed.prompts.has(name);
  return resourceAllowed(name, allowed);
}

const NOUN: Record<TargetKind, string> = { tool: 'Tool', prompt: 'Prompt', resource: 'Resource' };

/** The JSON-RPC error that answers a request for a hidden (or unknown) capability; undefined when allowed. */
export function refusalOf(req: JsonRpcRequest, allowed: AllowList): JsonRpcError | undefined {
  const target = targetOf(req);
  if (!target || isAllowed(target, allowed)) return undefined;
  const name = str(target.name);
  return rpcError(
    req.id,
    INVALID_PARAMS,
    name === undefined ? `Invalid params: ${req.method} must name a ${target.kind}` : `${NOUN[target.kind]} ${name} not found`,
  );
}

type Entry = Record<string, unknown>;

/** The listing methods, the array their result carries, and whether one entry of it is allowed. */
const LISTINGS: Record<string, { key: string; keep: (e: Entry, a: AllowList) => boolean }> = {
  'tools/list': { key: 'tools', keep: (e, a) => typeof e.name === 'string' && a.tools.has(e.name) },
  'prompts/list': { key: 'prompts', keep: (e, a) => typeof e.name === 'string' && a.prompts.has(e.name) },
  'resources/list': { key: 'resources', keep: (e, a) => typeof e.uri === 'string' && resourceAllowed(e.uri, a) },
  'resources/templates/list': { key: 'resourceTemplates', keep: (e, a) => typeof e.uriTemplate === 'string' && a.resources.has(e.uriTemplate) },
};

export const isListing = (method: string): boolean => method in LISTINGS;

/** A listing's result with only the allowed entries (anything else in the result is kept). */
export function filterListing(method: string, result: unknown, allowed: AllowList): unknown {
  const listing = LISTINGS[method];
  if (!listing || typeof result !== 'object' || result === null) return result;
  const r = result as Record<string, unknown>;
  const entries = r[listing.key];
  if (!Array.isArray(entries)) return result;
  return { ...r, [listing.key]: entries.filter((e: unknown) => typeof e === 'object' && e !== null && listing.keep(e as Entry, allowed)) };
}
