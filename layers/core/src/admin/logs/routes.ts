/**
 * `/v1/logs`: insert custom logs, list with filters and a cursor, read one log, and the groups of
 * SPEC.md's endpoint table. Logs are shown for LOG_RETENTION_DISPLAY days.
 */
import { NotFoundError } from '../../http/errors.ts';
import { customLogEvent } from '../../observability/custom-log.ts';
import { parseFilters, rollupPlan } from '../../observability/filters.ts';
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
import { ownDataOnly, readScope, requestedWorkspace } from './scope.ts';

const queryObject = (q: URLSearchParams): Record<string, string> => Object.fromEntries(q);

async function list(ctx: AdminContext) {
  const q = parseWith(listQuerySchema, { page_size: ctx.query.get('page_size') ?? undefined, cursor: ctx.query.get('cursor') ?? undefined });
  const now = ctx.deps.clock.now();
  // An organisation key that names no workspace reads every workspace of its organisation.
  const scope = await readScope(ctx, requestedWorkspace(ctx), { organisationWide: true });
  const filters = await ownDataOnly(ctx, parseFilters(queryObject(ctx.query), { now, retentionDays: ctx.deps.config.logRetentionDays }));
  const o = observability(ctx.deps);
  const page = await o.logs.pageAcross(scope.workspaces, filters, { limit: q.page_size, cursor: q.cursor });
  // The total comes from the rollups when they can answer (first page only); otherwise only the logs could count it.
  const total = !q.cursor && rollupPlan(filters) ? (await o.analytics.collect(scope, filters)).total.sums.n : null;
  return {
    object: 'list' as const,
    total,
    data: page.events.map(logRow),
    has_more: page.cursor !== undefined,
    next_cursor: page.cursor ?? null,
  };
}

async function getOne(ctx: AdminContext) {
  const id = ctx.params.logId ?? '';
  const o = observability(ctx.deps);
  const event = await o.logs.get(id);
  const p = ctx.principal;
  const visible =
    event &&
    (event.workspace_id === null
      ? p.owner
      : event.organisation_id === p.organisationId && (p.workspaceId === null || p.workspaceId === event.workspace_id));
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
