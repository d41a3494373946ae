/**
 * `/v1/logs/exports` (scope logs.export; DATA_EXPORTS_ENABLED=OFF answers 403 naming the flag),
 * and locally the file behind a signed download link.
 */
import type { Hono } from 'hono';
import type { CoreDeps } from '../../deps.ts';
import { ForbiddenError, NotFoundError } from '../../http/errors.ts';
import { toResponse } from '../../http/error-response.ts';
import { observability } from '../../observability/install.ts';
import { page, parsePaging } from '../pagination.ts';
import { featureDisabled, type AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { readScope, requestedWorkspace } from '../logs/scope.ts';
import { createExportSchema, updateExportSchema } from './schema.ts';
import { cancelExport, checkLocalSignature, createExport, downloadExport, exportView, loadExport, startExport, updateExport } from './service.ts';

const id = (params: Record<string, string>) => params.exportId ?? '';

export const logExportRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/logs/exports',
    scope: 'logs.export',
    feature: 'dataExports',
    ...withBody(createExportSchema, async (ctx, body) => createExport(ctx, body)),
  },
  {
    method: 'GET',
    path: '/v1/logs/exports',
    scope: 'logs.export',
    feature: 'dataExports',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const named = requestedWorkspace(ctx);
      const workspace = ctx.principal.workspaceId ?? (named ? (await readScope(ctx, named, { organisationWide: false })).workspaces[0] : undefined);
      const all = await observability(ctx.deps).exports.list(ctx.principal.organisationId, workspace);
      return page(all.map(exportView), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/logs/exports/:exportId',
    scope: 'logs.export',
    feature: 'dataExports',
    handler: async (ctx) => exportView(await loadExport(ctx, id(ctx.params))),
  },
  {
    method: 'PUT',
    path: '/v1/logs/exports/:exportId',
    scope: 'logs.export',
    feature: 'dataExports',
    ...withBody(updateExportSchema, async (ctx, body) => updateExport(ctx, id(ctx.params), body)),
  },
  {
    method: 'POST',
    path: '/v1/logs/exports/:exportId/start',
    scope: 'logs.export',
    feature: 'dataExports',
    handler: (ctx) => startExport(ctx, id(ctx.params)),
  },
  {
    method: 'POST',
    path: '/v1/logs/exports/:exportId/cancel',
    scope: 'logs.export',
    feature: 'dataExports',
    handler: (ctx) => cancelExport(ctx, id(ctx.params)),
  },
  {
    method: 'GET',
    path: '/v1/logs/exports/:exportId/download',
    scope: 'logs.export',
    feature: 'dataExports',
    handler: (ctx) => downloadExport(ctx, id(ctx.params)),
  },
];

/** The local download route: the link's signature is its credential (as an S3 pre-signed URL's is). */
export function mountExportFile(app: Hono, deps: CoreDeps): void {
  app.get('/v1/logs/exports/:exportId/file', async (c) => {
    try {
      if (!deps.config.features.dataExports) throw featureDisabled('dataExports', 'The log exports feature');
      const q = new URL(c.req.url).searchParams;
      const org = q.get('org') ?? '';
      const exportId = c.req.param('exportId');
      if (!checkLocalSignature(org, exportId, Number(q.get('expires')), q.get('signature') ?? '', deps.clock.now())) {
        throw new ForbiddenError('The download link is invalid or has expired');
      }
      const r = await observability(deps).exports.get(org, exportId);
      const bytes = r?.file_key ? await deps.blobs.get(r.file_key) : undefined;
      if (!r || !bytes) throw new NotFoundError(`Log export ${exportId} has no file`);
      return new Response(Buffer.from(bytes).toString('utf8'), {
        headers: { 'content-type': 'application/x-ndjson', 'content-disposition': `attachment; filename="logs-${exportId}.jsonl"` },
      });
    } catch (err) {
      return toResponse(err, 'admin');
    }
  });
}
