/** `/v1/analytics`: groups, graphs and summaries, answered from rollups (scope analytics.view). */
import { GRAPHS } from '../../observability/analytics-views.ts';
import type { AdminRoute } from '../route.ts';
import { feedbackGraphAnswer, graphAnswer, groupsAnswer, summaryAnswer } from './service.ts';

export const analyticsRoutes: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/v1/analytics/groups/:groupBy',
    scope: 'analytics.view',
    handler: (ctx) => groupsAnswer(ctx, { retentionDays: ctx.deps.config.metricsRetentionDays }),
  },
  { method: 'GET', path: '/v1/analytics/summary', scope: 'analytics.view', handler: (ctx) => summaryAnswer(ctx, 'all') },
  { method: 'GET', path: '/v1/analytics/summary/cache', scope: 'analytics.view', handler: (ctx) => summaryAnswer(ctx, 'cache') },
  { method: 'GET', path: '/v1/analytics/graphs/feedback', scope: 'analytics.view', handler: feedbackGraphAnswer },
  ...GRAPHS.map(
    (graph): AdminRoute => ({ method: 'GET', path: `/v1/analytics/graphs/${graph}`, scope: 'analytics.view', handler: (ctx) => graphAnswer(ctx, graph) }),
  ),
];
