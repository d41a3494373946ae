/**
 * What a route module is: a function that mounts its routes on the app and may leave a fallback.
 * The gateway, the admin API and the MCP gateway are each one; app.ts composes them.
 */
import type { Context, Hono } from 'hono';
import type { CoreDeps } from '../deps.ts';

/**
 * Answers a request that no route of any module matched, or returns undefined to leave it to the
 * next fallback and finally the 404 (the gateway's passthrough is one). Running only after every
 * route, whatever the module order, a fallback can never shadow a route.
 */
export type Fallback = (c: Context) => Response | undefined | Promise<Response | undefined>;

/** Mounts a module's routes; may return a fallback. */
export type RouteModule = (app: Hono, deps: CoreDeps) => void | Fallback;
