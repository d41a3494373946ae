/**
 * The MCP gateway's routes: `/mcp/{server-slug}`, `/v1/mcp/{server-slug}` (the form API Gateway
 * routes to the gateway function with every other `/v1` path) and Portkey's `/{server-slug}/mcp`;
 * POST (JSON-RPC), GET (the server's stream) and DELETE (session end), all relayed. The Portkey shape is a fallback
 * (run after every route) so that a slug can never shadow another module's path; `/v1/...` and
 * `/v2/...` are never slugs. The handler is imported on first use: the model gateway's cold start
 * does not pay for it.
 */
import type { Context } from 'hono';
import type { CoreDeps } from '../../deps.ts';
import type { RouteModule } from '../../http/route-module.ts';
import type { RuntimeBindings } from '../../http/bodies.ts';

const METHODS = ['POST', 'GET', 'DELETE'];
const PORTKEY_SHAPE = /^\/([A-Za-z0-9][A-Za-z0-9_-]{0,127})\/mcp\/?$/;

let handler: Promise<typeof import('./handler.ts')> | undefined;
async function serve(c: Context, deps: CoreDeps, slug: string): Promise<Response> {
  const { handleMcp } = await (handler ??= import('./handler.ts'));
  return handleMcp(c.req.raw, deps, slug, c.env as RuntimeBindings | undefined);
}

export const mcpModule: RouteModule = (app, deps) => {
  app.on(METHODS, ['/mcp/:slug', '/v1/mcp/:slug'], (c) => serve(c, deps, c.req.param('slug')));
  return (c) => {
    const slug = PORTKEY_SHAPE.exec(c.req.path)?.[1];
    if (!slug || slug === 'v1' || slug === 'v2' || !METHODS.includes(c.req.method)) return undefined;
    return serve(c, deps, slug);
  };
};
