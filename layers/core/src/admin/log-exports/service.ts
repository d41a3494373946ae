/**
 * Log exports: create (filters, columns), list, get, update, start, cancel and download. Starting
 * fixes the time range and queues the job (`log-exports` queue); the worker writes JSONL to blob
 * storage and records its progress after each part. DATA_EXPORTS_ENABLED=OFF closes every route.
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { ConflictError, NotFoundError, ValidationError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { S3BlobStore } from '../../ports/aws/blob-s3.ts';
import { MAX_EXPORT_ROWS, newRun, type ExportRecord } from '../../observability/exports.ts';
import { parseFilters, rollupPlan } from '../../observability/filters.ts';
import { observability } from '../../observability/install.ts';
import { EXPORTS_QUEUE, type ExportQueueMessage } from '../../observability/messages.ts';
import type { AdminContext } from '../route.ts';
import { readScope } from '../logs/scope.ts';
import type { CreateExportBody, UpdateExportBody } from './schema.ts';

/** How long a download link works. */
export const DOWNLOAD_TTL_SECONDS = 3600;

export function exportView(r: ExportRecord) {
  return {
    object: 'export' as const,
    id: r.id,
    organisation_id: r.organisation_id,
    workspace_id: r.workspace_id,
    filters: r.filters,
    requested_data: r.requested_data,
    status: r.status,
    description: r.description,
    created_at: r.created_at,
    last_updated_at: r.last_updated_at,
    created_by: r.created_by,
    last_updated_by: r.last_updated_by,
    progress: { exported: r.exported, total: r.total, parts: r.parts },
    started_at: r.started_at,
    finished_at: r.finished_at,
    error: r.error,
  };
}

/** Problems in `filters` are named `filters.<name>`. */
function checkFilters(ctx: AdminContext, filters: Record<string, unknown>) {
  try {
    return parseFilters(filters, { now: ctx.deps.clock.now(), retentionDays: ctx.deps.config.logRetentionDays });
  } catch (err) {
    if (err instanceof ValidationError) throw new ValidationError(err.problems.map((p) => ({ path: `filters.${p.path}`, message: p.message })));
    throw err;
  }
}

/** Matching logs per the rollups (capped at the export's size); 0 when only the logs could count them. */
async function countFor(ctx: AdminContext, workspaceId: string, filters: Record<string, unknown>): Promise<number> {
  const f = checkFilters(ctx, filters);
  if (!rollupPlan(f)) return 0;
  const collected = await observability(ctx.deps).analytics.collect({ organisationId: ctx.principal.organisationId, workspaces: [workspaceId] }, f);
  const limit = Math.min(Number(filters.page_size ?? MAX_EXPORT_ROWS) || MAX_EXPORT_ROWS, MAX_EXPORT_ROWS);
  return Math.min(collected.total.sums.n, limit);
}

async function workspaceOf(ctx: AdminContext, body: { workspace_id?: string | undefined; filters: Record<string, unknown> }): Promise<string> {
  const named = body.workspace_id ?? (typeof body.filters.workspace_slug === 'string' ? body.filters.workspace_slug : undefined);
  const scope = await readScope(ctx, named, { organisationWide: false });
  return scope.workspaces[0] as string;
}

export async function loadExport(ctx: AdminContext, id: string): Promise<ExportRecord> {
  const r = await observability(ctx.deps).exports.get(ctx.principal.organisationId, id);
  if (!r || (ctx.principal.workspaceId !== null && r.workspace_id !== ctx.principal.workspaceId)) throw new NotFoundError(`Log export ${id} not found`);
  return r;
}

const nowIso = (ctx: AdminContext) => new Date(ctx.deps.clock.now()).toISOString();

export async function createExport(ctx: AdminContext, body: CreateExportBody) {
  checkFilters(ctx, body.filters);
  const workspaceId = await workspaceOf(ctx, body);
  const now = nowIso(ctx);
  const p: Principal = ctx.principal;
  const r: ExportRecord = {
    id: randomUUID(),
    organisation_id: p.organisationId,
    workspace_id: workspaceId,
    filters: body.filters,
    requested_data: body.requested_data,
    description: body.description ?? '',
    status: 'draft',
    created_at: now,
    last_updated_at: now,
    created_by: p.keyId,
    last_updated_by: p.keyId,
    total: await countFor(ctx, workspaceId, body.filters),
    exported: 0,
    parts: 0,
    run: null,
    range_from: null,
    range_to: null,
    cursor: null,
    skipped: 0,
    sink: null,
    file_key: null,
    error: null,
    started_at: null,
    finished_at: null,
  };
  await observability(ctx.deps).exports.put(r);
  return { id: r.id, total: r.total, object: 'export' as const };
}

export async function updateExport(ctx: AdminContext, id: string, body: UpdateExportBody) {
  const current = await loadExport(ctx, id);
  if (current.status === 'in_progress') throw new ConflictError('The export is running: cancel it before changing it');
  checkFilters(ctx, body.filters);
  const workspaceId = body.workspace_id || body.filters.workspace_slug ? await workspaceOf(ctx, body) : current.workspace_id;
  const next: ExportRecord = {
    ...current,
    workspace_id: workspaceId,
    filters: body.filters,
    requested_data: body.requested_data ?? current.requested_data,
    description: body.description ?? current.description,
    // A changed export is a new draft: its old file no longer matches it.
    status: 'draft',
    file_key: null,
    exported: 0,
    parts: 0,
    total: await countFor(ctx, workspaceId, body.filters),
    last_updated_at: nowIso(ctx),
    last_updated_by: ctx.principal.keyId,
  };
  await observability(ctx.deps).exports.put(next);
  return { id: next.id, total: next.total, object: 'export' as const };
}

export async function startExport(ctx: AdminContext, id: string) {
  const current = await loadExport(ctx, id);
  if (current.status === 'in_progress') throw new ConflictError('The export is already running');
  const now = ctx.deps.clock.now();
  const f = checkFilters(ctx, current.filters);
  const run = newRun();
  const next: ExportRecord = {
    ...current,
    status: 'in_progress',
    run,
    // Fixed now, so that every page of this run reads the same logs.
    range_from: f.from,
    range_to: f.to,
    cursor: null,
    exported: 0,
    skipped: 0,
    parts: 0,
    sink: null,
    file_key: null,
    error: null,
    started_at: new Date(now).toISOString(),
    finished_at: null,
    last_updated_at: new Date(now).toISOString(),
    last_updated_by: ctx.principal.keyId,
  };
  await observability(ctx.deps).exports.put(next);
  const msg: ExportQueueMessage = { kind: 'export', organisation_id: next.organisation_id, export_id: next.id, run };
  await ctx.deps.queues.get<ExportQueueMessage>(EXPORTS_QUEUE).send(msg);
  return { message: 'Export started', object: 'export' as const };
}

export async function cancelExport(ctx: AdminContext, id: string) {
  const current = await loadExport(ctx, id);
  if (current.status !== 'in_progress') throw new ConflictError(`The export is not running (status ${current.status})`);
  const now = nowIso(ctx);
  const ok = await observability(ctx.deps).exports.saveIf(
    { ...current, status: 'stopped', finished_at: now, last_updated_at: now, last_updated_by: ctx.principal.keyId },
    current.run,
    'in_progress',
  );
  if (!ok) throw new ConflictError('The export finished or changed meanwhile');
  return { message: 'Export cancelled', object: 'export' as const };
}

/** Signs local download links; valid in this process only (in AWS, S3 signs them). */
const LOCAL_SECRET = randomBytes(32);

const localSignature = (org: string, id: string, expires: number) => createHmac('sha256', LOCAL_SECRET).update(`${org}:${id}:${expires}`).digest('base64url');

export function checkLocalSignature(org: string, id: string, expires: number, signature: string, nowMs: number): boolean {
  if (!Number.isFinite(expires) || expires * 1000 < nowMs) return false;
  const expected = Buffer.from(localSignature(org, id, expires));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export async function downloadExport(ctx: AdminContext, id: string) {
  const r = await loadExport(ctx, id);
  if (r.status !== 'success' || !r.file_key) throw new ConflictError(`The export has no file yet (status ${r.status})`);
  const blobs = ctx.deps.blobs;
  if (blobs instanceof S3BlobStore) {
    const url = await getSignedUrl(await blobs.client(), new GetObjectCommand({ Bucket: blobs.bucket, Key: blobs.prefix + r.file_key }), {
      expiresIn: DOWNLOAD_TTL_SECONDS,
    });
    return { signed_url: url };
  }
  const expires = Math.floor(ctx.deps.clock.now() / 1000) + DOWNLOAD_TTL_SECONDS;
  const base = (ctx.deps.config.publicUrl ?? new URL(ctx.request.url).origin).replace(/\/+$/, '');
  const q = new URLSearchParams({ org: r.organisation_id, expires: String(expires), signature: localSignature(r.organisation_id, r.id, expires) });
  return { signed_url: `${base}/v1/logs/exports/${r.id}/file?${q}` };
}
