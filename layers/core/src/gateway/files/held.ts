/**
 * Files held by the gateway: `/v1/files` when the request names no provider (no `x-gw-provider`,
 * `x-gw-config`, `x-gw-custom-host` or `x-gw-virtual-key`, and the key pins no config). The
 * metadata is in the table (store/files.ts), the bytes in blob storage, both of the caller's
 * workspace. Authenticated like every gateway route (completions.write); answers and errors in
 * OpenAI's shape. A request naming a provider goes through the pipeline to it, as before.
 */
import type { CoreDeps } from '../../deps.ts';
import { nodeStreamResponse } from '../../http/bodies.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { jsonResponse } from '../../http/json.ts';
import { heldFileBlobKey, HeldFileRepository, newFileId, type HeldFileRecord } from '../../store/files.ts';
import type { GatewayPrincipal } from '../access.ts';
import { heldCall } from '../held-call.ts';
import { gatewayKeyFromBearer } from '../headers.ts';
import { storeUpload } from './upload.ts';

export type FileOperation = 'upload' | 'list' | 'retrieve' | 'content' | 'delete';

const ROUTING_HEADERS = ['x-gw-provider', 'x-gw-config', 'x-gw-custom-host', 'x-gw-virtual-key'] as const;
const FILE_ID = /^file-[a-z0-9]{1,64}$/;
const MAX_LIST_LIMIT = 10_000;

export const namesProvider = (headers: Headers): boolean => ROUTING_HEADERS.some((h) => headers.get(h)?.trim());

export function fileObject(r: HeldFileRecord) {
  return {
    id: r.id,
    object: 'file' as const,
    bytes: r.bytes,
    created_at: r.created_at,
    filename: r.filename,
    purpose: r.purpose,
    status: 'processed' as const,
    expires_at: null,
    status_details: null,
  };
}

interface Call {
  req: Request;
  deps: CoreDeps;
  principal: GatewayPrincipal;
  repo: HeldFileRepository;
  fileId: string | undefined;
}

async function found(c: Call): Promise<HeldFileRecord> {
  const id = c.fileId ?? '';
  const rec = FILE_ID.test(id) ? await c.repo.get(c.principal.workspaceId, id) : undefined;
  if (!rec) throw new NotFoundError(`No such File object: ${id}`, { param: 'file_id', openaiCode: 'not_found' });
  return rec;
}

async function upload(c: Call): Promise<Response> {
  const now = c.deps.clock.now();
  const id = newFileId(now);
  const blobKey = heldFileBlobKey(c.principal.workspaceId, id);
  const stored = await storeUpload(c.req, c.deps.blobs, blobKey);
  const rec: HeldFileRecord = {
    id,
    organisation_id: c.principal.organisationId,
    workspace_id: c.principal.workspaceId,
    ...stored,
    created_at: Math.floor(now / 1000),
    blob_key: blobKey,
  };
  await c.repo.put(rec);
  return jsonResponse(fileObject(rec));
}

function listLimit(raw: string | null): number {
  if (raw === null) return MAX_LIST_LIMIT;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIST_LIMIT) throw ValidationError.field('limit', `must be an integer between 1 and ${MAX_LIST_LIMIT}`);
  return n;
}

async function list(c: Call): Promise<Response> {
  const q = new URL(c.req.url).searchParams;
  const limit = listLimit(q.get('limit'));
  const after = q.get('after') ?? undefined;
  const purpose = q.get('purpose') ?? undefined;
  const order = q.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw ValidationError.field('order', 'must be asc or desc');
  const page = await c.repo.list(c.principal.workspaceId, { limit, asc: order === 'asc', ...(after ? { after } : {}), ...(purpose ? { purpose } : {}) });
  const data = page.data.map(fileObject);
  return jsonResponse({ object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.has_more });
}

async function content(c: Call): Promise<Response> {
  const rec = await found(c);
  const body = await c.deps.blobs.getStream(rec.blob_key);
  if (!body) throw new NotFoundError(`No such File object: ${rec.id}`, { param: 'file_id', openaiCode: 'not_found' });
  const headers = {
    'content-type': 'application/octet-stream',
    'content-length': String(rec.bytes),
    'content-disposition': `attachment; filename="${rec.filename.replace(/["\\\r\n]/g, '_')}"`,
  };
  return nodeStreamResponse(body, { status: 200, headers });
}

async function remove(c: Call): Promise<Response> {
  const id = c.fileId ?? '';
  const rec = FILE_ID.test(id) ? await c.repo.delete(c.principal.workspaceId, id) : undefined;
  if (!rec) throw new NotFoundError(`No such File object: ${id}`, { param: 'file_id', openaiCode: 'not_found' });
  await c.deps.blobs.delete(rec.blob_key);
  return jsonResponse({ id: rec.id, object: 'file', deleted: true });
}

const OPERATIONS: Record<FileOperation, (c: Call) => Promise<Response>> = {
  upload,
  list,
  retrieve: async (c) => jsonResponse(fileObject(await found(c))),
  content,
  delete: remove,
};

/**
 * Answers a `/v1/files` request held by the gateway, or, when the request or its key names where
 * to send it, hands it to `toProvider` (the pipeline).
 */
export async function handleFiles(
  op: FileOperation,
  req: Request,
  deps: CoreDeps,
  fileId: string | undefined,
  toProvider: () => Promise<Response>,
): Promise<Response> {
  const headers = gatewayKeyFromBearer(req.headers);
  if (namesProvider(headers)) return toProvider();
  return heldCall(deps, headers, 'files', async (principal) => {
    if (principal.defaults?.config_id) return toProvider();
    return OPERATIONS[op]({ req, deps, principal, repo: new HeldFileRepository(deps.repos.table), fileId });
  });
}
