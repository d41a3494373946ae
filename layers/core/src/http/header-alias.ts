/**
 * `x-portkey-*` as an alias of `x-gw-*`, done once where requests enter (around the app's fetch, for
 * every route, gateway and admin), so no reader of a header knows of it. Teams moving from that gateway
 * keep its SDK: its headers are read as Gantry's, and the answer's `x-gw-*` headers go back under
 * the prefix the request used. An `x-gw-` header the client also sent wins over its alias. The
 * aliased headers are removed, so none reaches a provider (the passthrough forwards client headers).
 */
import type { Hono } from 'hono';

const OWN = 'x-gw-';
/** The established gateway's header prefix, read as `x-gw-`. */
export const ALIAS_PREFIX = 'x-portkey-';
const ALIAS = ALIAS_PREFIX;

/** Renames the request's alias headers in place (the runtimes' Requests have mutable headers). */
function aliasRequest(headers: Headers): boolean {
  const aliased: Array<[string, string]> = [];
  headers.forEach((value, name) => {
    if (name.startsWith(ALIAS)) aliased.push([name, value]);
  });
  for (const [name, value] of aliased) {
    const own = OWN + name.slice(ALIAS.length);
    if (!headers.has(own)) headers.set(own, value);
    headers.delete(name);
  }
  return aliased.length > 0;
}

/** The answer's `x-gw-*` headers under the alias prefix. */
function aliasResponse(headers: Headers): void {
  const own: Array<[string, string]> = [];
  headers.forEach((value, name) => {
    if (name.startsWith(OWN)) own.push([name, value]);
  });
  for (const [name, value] of own) {
    headers.delete(name);
    headers.set(ALIAS + name.slice(OWN.length), value);
  }
}

type Fetch = Hono['fetch'];

/**
 * Wraps the app's fetch rather than adding a `*` middleware: a middleware on every route sends
 * every request through Hono's compose, which costs the hot path more than this check does.
 */
export function withPortkeyHeaderAlias(fetch: Fetch): Fetch {
  return async (request, env, ctx) => {
    const aliased = aliasRequest(request.headers);
    const res = await fetch(request, env, ctx);
    if (!aliased) return res;
    try {
      aliasResponse(res.headers);
      return res;
    } catch {
      // An answer with immutable headers (a fetch Response): copied once, body untouched.
      const copy = new Response(res.body, res);
      aliasResponse(copy.headers);
      return copy;
    }
  };
}
