/**
 * `/v1/logs`: insert custom logs, list with filters and a cursor, read one log, and the groups of
 * docs/design/spec.md#admin-resources. Logs are shown for LOG_RETENTION_DISPLAY days.
 */
import { NotFoundError } from '../../http/errors.ts';
import { customLogEvent } from '../../observability/custom-log.ts';
import { parseFilters, rollupPlan, type LogFilters } from '../../observability/filters.ts';
import type { AnalyticsScope } from '../../observability/analytics.ts';
import { ReadBudgetSpent } from '../../observability/rollups.ts';
import { observability } from '../../observability/install.ts';
import { withBodies } from '../../observability/log-store.ts';
import { logRow, logView } from '../../observability/log-views.ts';
import { LOGS_QUEUE, type LogQueueMessage } from '../../observability/messages.ts';
import { groupsAnswer } from '../analytics/service.ts';
import { feedbackOnTrace } from '../feedback/reads.ts';
import type * as z from 'zod';
import { withBody } from '../body.ts';
import { parseWith, type AdminContext, type AdminRoute } from '../route.ts';
import { insertLogsSchema, listQuerySchema } from './schema.ts';
import { ownDataOnly, readScope, requestedWorkspace, UNATTRIBUTED } from './scope.ts';

const queryObject = (q: URLSearchParams): Record<string, string> => Object.fromEntries(q);

/**
 * Rollup items a page's total may read. A busy workspace has thousands of rollup combinations per
 * hour, so counting a month of them could take longer than the page itself: past this the total is
 * `null`, as it is for filters the rollups cannot answer (the analytics API still counts on demand).
 */
export const LOGS_TOTAL_MAX_ROLLUP_ITEMS = 1_000;

async function countFromRollups(o: ReturnType<typeof observability>, scope: AnalyticsScope, filters: LogFilters): Promise<number | null> {
  try {
    return (await o.analytics.collect(scope, filters, { maxRollupItems: LOGS_TOTAL_MAX_ROLLUP_ITEMS, figures: [] })).total.sums.n;
  } catch (err) {
    if (err instanceof ReadBudgetSpent) return null;
    throw err;
  }
}

async function list(ctx: AdminContext) {
  const q = parseWith(listQuerySchema, { page_size: ctx.query.get('page_size') ?? undefined, cursor: ctx.query.get('cursor') ?? undefined });
  const now = ctx.deps.clock.now();
  // An organisation key that names no workspace reads every workspace of its organisation.
  const scope = await readScope(ctx, requestedWorkspace(ctx), { organisationWide: true });
  const filters = await ownDataOnly(ctx, parseFilters(queryObject(ctx.query), { now, retentionDays: ctx.deps.config.logRetentionDays }));
  const o = observability(ctx.deps);
  // The total comes from the rollups when they can answer cheaply (first page only), read alongside the page.
  const counting = !q.cursor && rollupPlan(filters) ? countFromRollups(o, scope, filters) : null;
  const [page, total] = await Promise.all([o.logs.pageAcross(scope.workspaces, filters, { limit: q.page_size, cursor: q.cursor }), counting]);
  return {
    object: 'list' as const,
    total,
    data: page.events.map(logRow),
    has_more: page.cursor !== undefined,
    next_cursor: page.cursor ?? null,
    // The read budget ended a short page: the console says so and offers to search on from the cursor.
    partial: page.scannedUntil !== undefined,
    scanned_until: page.scannedUntil ?? null,
  };
}

async function getOne(ctx: AdminContext) {
  const id = ctx.params.logId ?? '';
  const o = observability(ctx.deps);
  const p = ctx.principal;
  // Where the caller may read: the id and the workspace place the log (observability/log-store.ts).
  const workspaces = async () =>
    p.workspaceId ? [p.workspaceId] : [...(await ctx.deps.repos.workspaces.list(p.organisationId)).map((w) => w.id), ...(p.owner ? [UNATTRIBUTED] : [])];
  const event = await o.logs.get(id, workspaces);
  const visible =
    event &&
    (event.workspace_id === null ? p.owner : event.organisation_id === p.organisationId && (p.workspaceId === null || p.workspaceId === event.workspace_id));
  if (!event || !visible) throw new NotFoundError(`Log ${id} not found`);
  const own = await ownDataOnly(ctx, { from: 0, to: Number.MAX_SAFE_INTEGER });
  if ((own.keyUserIds && !own.keyUserIds.includes(event.key_user_id ?? '')) || (own.apiKeyIds && !own.apiKeyIds.includes(event.api_key_id ?? ''))) {
    throw new NotFoundError(`Log ${id} not found`);
  }
  // The feedback sent on the request's trace (POST /v1/feedback), oldest first.
  return { ...logView(await withBodies(event, ctx.deps.blobs)), feedback: await feedbackOnTrace(ctx.deps, event.workspace_id, event.trace_id) };
}

async function insert(ctx: AdminContext, body: z.output<typeof insertLogsSchema>) {
  const items = Array.isArray(body) ? body : [body];
  const now = ctx.deps.clock.now();
  const events = await Promise.all(items.map((i) => customLogEvent(i, ctx.principal, now, ctx.deps.blobs)));
  await ctx.deps.queues.get<LogQueueMessage>(LOGS_QUEUE).sendBatch(events.map((event) => ({ kind: 'log' as const, event })));
  return { object: 'log', ids: events.map((e) => e.id) };
}

export const logRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/logs',
    // Apps insert logs of the calls they made themselves, with the key they call the gateway with.
    scope: 'completions.write',
    ...withBody(insertLogsSchema, insert),
  },
  { method: 'GET', path: '/v1/logs', scope: 'logs.list', handler: list },
  {
    method: 'GET',
    path: '/v1/logs/groups/:groupBy',
    scope: 'logs.list',
    handler: (ctx) => groupsAnswer(ctx, { retentionDays: ctx.deps.config.logRetentionDays }),
  },
  { method: 'GET', path: '/v1/logs/:logId', scope: 'logs.view', handler: getOne },
];
