/**
 * The one mechanism every admin route goes through: authenticate the key, check the feature flag
 * and the route's scope, parse the body, run the handler, render errors in the admin shape. A
 * route cannot be declared without a scope, so none can forget authorization.
 */
import type { Hono } from 'hono';
import type * as z from 'zod';
import type { CoreDeps } from '../deps.ts';
import { errorResponse } from '../http/app.ts';
import { asGantryError, ForbiddenError, ValidationError } from '../http/errors.ts';
import { jsonResponse, tryParseJson } from '../http/json.ts';
import { readBodyText } from '../http/bodies.ts';
import { PARSE_CONTEXT, problemsFromZod } from '../gateway/validate/common.ts';
import type { Principal } from '../policy/principal.ts';
import type { Scope } from '../policy/scopes.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface AdminContext {
  principal: Principal;
  params: Record<string, string>;
  query: URLSearchParams;
  deps: CoreDeps;
  request: Request;
  /** The JSON body (AB01 when it is not valid JSON). */
  body(): Promise<unknown>;
}

export interface AdminRoute {
  method: HttpMethod;
  /** Hono path, e.g. `/v1/api-keys/:id`. */
  path: string;
  scope: Scope;
  handler: (ctx: AdminContext) => Promise<unknown>;
}

export function hasScope(p: Principal, scope: Scope): boolean {
  return p.owner || p.scopes.has(scope);
}

/** Validates `value` with a zod schema, turning every issue into an AB01 problem. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value, PARSE_CONTEXT);
  if (!result.success) throw new ValidationError(problemsFromZod(result.error.issues, value));
  return result.data;
}

export function mountAdminRoutes(app: Hono, deps: CoreDeps, routes: readonly AdminRoute[]): void {
  for (const route of routes) {
    app.on(route.method, route.path, async (c) => {
      try {
        if (!deps.config.features.apiAccess) {
          throw new ForbiddenError('The admin API is disabled on this deployment (API_ACCESS_ENABLED=OFF)');
        }
        const principal = await deps.keyAuth.authenticate(c.req.header('x-gw-api-key'));
        if (!hasScope(principal, route.scope)) {
          throw new ForbiddenError(`This API key lacks the scope ${route.scope}`);
        }
        const request = c.req.raw;
        const result = await route.handler({
          principal,
          params: c.req.param() as Record<string, string>,
          query: new URL(request.url).searchParams,
          deps,
          request,
          body: async () => {
            const text = await readBodyText(request);
            if (text.trim() === '') return {};
            const parsed = tryParseJson(text);
            if (!parsed.ok) throw ValidationError.field('body', 'must be valid JSON');
            return parsed.value;
          },
        });
        return jsonResponse(result ?? {});
      } catch (err) {
        const e = asGantryError(err);
        if (e.status >= 500) deps.logger.error('admin route failed', { path: route.path, error: err });
        return errorResponse(e, c.req.path);
      }
    });
  }
}
