/**
 * Batches run by the gateway (`/v1/batches`): created when `completion_window` is `immediate` or
 * the input file is held by the gateway, then run line by line through the pipeline
 * (batches/engine.ts, started through the BatchRunner port). Retrieve, cancel, output and list
 * answer from the table for such batches; everything else (a provider's own batch API, with a
 * provider named) goes through the pipeline to the provider, as before.
 */
import type { CoreDeps } from '../deps.ts';
import { batchObject } from '../batches/object.ts';
import { sealHeaders } from '../batches/line-call.ts';
import { BATCHABLE_ENDPOINTS } from '../batches/batchable.ts';
import { nodeStreamResponse, readBodyText } from '../http/bodies.ts';
import { ConflictError, NotFoundError, ServiceUnavailableError, ValidationError } from '../http/errors.ts';
import { jsonResponse, tryParseJson } from '../http/json.ts';
import { BatchRepository, FINAL_STATUSES, newBatchId, type BatchRecord } from '../store/batches.ts';
import { HeldFileRepository } from '../store/files.ts';
import type { GatewayPrincipal } from './access.ts';
import { heldCall } from './held-call.ts';
import { namesProvider } from './files/held.ts';
import { gatewayKeyFromBearer } from './headers.ts';
import { invalidJson } from './request-body.ts';
import { parseBatchRequest } from './validate/batches.ts';

export type BatchOperation = 'create' | 'list' | 'retrieve' | 'cancel' | 'output';

const WINDOW_SECONDS = 24 * 3600;
const MAX_CREATE_BODY = 1 << 20;
const MAX_LIST_LIMIT = 100;

interface Call {
  req: Request;
  deps: CoreDeps;
  principal: GatewayPrincipal;
  headers: Headers;
  repo: BatchRepository;
  batchId: string | undefined;
  toProvider: () => Promise<Response>;
}

const notFound = (id: string) => new NotFoundError(`No such batch: ${id}`, { param: 'batch_id', openaiCode: 'not_found' });

/** The caller's held batch, or undefined when the id is not one (it may be a provider's). */
async function heldBatch(c: Call): Promise<BatchRecord | undefined> {
  const id = c.batchId ?? '';
  const b = /^batch_[a-z0-9]{1,64}$/.test(id) ? await c.repo.get(id) : undefined;
  return b && b.workspace_id === c.principal.workspaceId ? b : undefined;
}

/** A provider is named by the request or by the key's pinned config. */
const toProviderAllowed = (c: Call): boolean => namesProvider(c.headers) || Boolean(c.principal.defaults?.config_id);

async function create(c: Call): Promise<Response> {
  const text = await readBodyText(c.req.clone(), MAX_CREATE_BODY);
  const parsed = tryParseJson(text);
  if (!parsed.ok) throw invalidJson();
  const body = parseBatchRequest(parsed.value);
  const file = await new HeldFileRepository(c.deps.repos.table).get(c.principal.workspaceId, body.input_file_id);
  if (!file && body.completion_window === '24h') return c.toProvider();
  if (!file) throw new NotFoundError(`No such File object: ${body.input_file_id}`, { param: 'input_file_id', openaiCode: 'not_found' });
  if (file.purpose !== 'batch')
    throw ValidationError.field('input_file_id', `must be a file uploaded with purpose "batch" (this one has purpose "${file.purpose}")`);
  if (!(BATCHABLE_ENDPOINTS as readonly string[]).includes(body.endpoint))
    throw ValidationError.field('endpoint', `must be one of ${BATCHABLE_ENDPOINTS.join(', ')}`);
  if (!c.deps.batchRunner) throw new ServiceUnavailableError('Batches run by the gateway are not available in this deployment');
  const now = Math.floor(c.deps.clock.now() / 1000);
  const base = { id: newBatchId(c.deps.clock.now()), workspace_id: c.principal.workspaceId };
  const rec: BatchRecord = {
    ...base,
    organisation_id: c.principal.organisationId,
    endpoint: body.endpoint,
    input_file_id: file.id,
    completion_window: body.completion_window,
    status: 'validating',
    created_at: now,
    expires_at: now + WINDOW_SECONDS,
    total: 0,
    completed: 0,
    failed: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost_micros: 0,
    metadata: body.metadata ?? null,
    sealed_headers: await sealHeaders(c.deps, base, c.req.headers),
  };
  await c.repo.create(rec);
  await c.deps.batchRunner.start(rec.id);
  return jsonResponse(batchObject(rec));
}

function listLimit(raw: string | null): number {
  if (raw === null) return 20;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIST_LIMIT) throw ValidationError.field('limit', `must be an integer between 1 and ${MAX_LIST_LIMIT}`);
  return n;
}

async function list(c: Call): Promise<Response> {
  if (toProviderAllowed(c)) return c.toProvider();
  const q = new URL(c.req.url).searchParams;
  const after = q.get('after') ?? undefined;
  const page = await c.repo.list(c.principal.workspaceId, { limit: listLimit(q.get('limit')), ...(after ? { after } : {}) });
  const data = page.data.map(batchObject);
  return jsonResponse({ object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.has_more });
}

/** Runs `held` on the caller's held batch; a batch the gateway does not hold goes to the provider, if one is named. */
const onBatch =
  (held: (c: Call, b: BatchRecord) => Promise<Response>) =>
  async (c: Call): Promise<Response> => {
    const b = await heldBatch(c);
    if (b) return held(c, b);
    if (toProviderAllowed(c)) return c.toProvider();
    throw notFound(c.batchId ?? '');
  };

async function cancel(c: Call, b: BatchRecord): Promise<Response> {
  if (b.status !== 'cancelling' && b.status !== 'cancelled') {
    const moved = await c.repo.transition(b.id, ['validating', 'in_progress'], 'cancelling', { cancelling_at: Math.floor(c.deps.clock.now() / 1000) });
    if (!moved) {
      const now = (await c.repo.get(b.id)) ?? b;
      if (FINAL_STATUSES.has(now.status) || now.status === 'finalizing')
        throw new ConflictError(`Cannot cancel a batch with status ${now.status}`, { param: 'batch_id' });
    }
    // The runner finalizes it (cancelled) once the lines in flight have ended.
    await c.deps.batchRunner?.start(b.id);
  }
  return jsonResponse(batchObject((await c.repo.get(b.id)) ?? b));
}

async function output(c: Call, b: BatchRecord): Promise<Response> {
  const file = b.output_file_id ? await new HeldFileRepository(c.deps.repos.table).get(b.workspace_id, b.output_file_id) : undefined;
  const body = file ? await c.deps.blobs.getStream(file.blob_key) : undefined;
  if (!file || !body)
    throw new NotFoundError(`Batch ${b.id} has no output file yet (status: ${b.status})`, { param: 'batch_id', openaiCode: 'batch_output_not_ready' });
  return nodeStreamResponse(body, { status: 200, headers: { 'content-type': 'application/jsonl', 'content-length': String(file.bytes) } });
}

const OPERATIONS: Record<BatchOperation, (c: Call) => Promise<Response>> = {
  create,
  list,
  retrieve: onBatch(async (_c, b) => jsonResponse(batchObject(b))),
  cancel: onBatch(cancel),
  output: onBatch(output),
};

/** Answers a `/v1/batches` request for a batch the gateway runs, or hands it to `toProvider` (the pipeline). */
export function handleBatches(
  op: BatchOperation,
  req: Request,
  deps: CoreDeps,
  batchId: string | undefined,
  toProvider: () => Promise<Response>,
): Promise<Response> {
  const headers = gatewayKeyFromBearer(req.headers);
  return heldCall(deps, headers, 'batches', (principal) =>
    OPERATIONS[op]({ req, deps, principal, headers, repo: new BatchRepository(deps.repos.table), batchId, toProvider }),
  );
}
