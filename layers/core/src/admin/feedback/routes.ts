/** `/v1/feedback`: create and update feedback (workspace keys and users only), and list it. */
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { createFeedbackSchema, updateFeedbackSchema } from './schema.ts';
import { listFeedback } from './reads.ts';
import { FeedbackService } from './service.ts';

export const feedbackRoutes: readonly AdminRoute[] = [
  { method: 'GET', path: '/v1/feedback', scope: 'feedback.list', handler: listFeedback },
  {
    method: 'POST',
    path: '/v1/feedback',
    scope: 'feedback.create',
    audit: { transactional: true },
    example: { trace_id: 'trace-123', value: 5, weight: 1, metadata: { reviewer: 'ops' } },
    ...withBody(createFeedbackSchema, async (ctx, body) => new FeedbackService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'PUT',
    path: '/v1/feedback/:id',
    scope: 'feedback.update',
    audit: { transactional: true },
    ...withBody(updateFeedbackSchema, async (ctx, body) => new FeedbackService(ctx.deps).update(ctx.principal, ctx.params.id ?? '', body)),
  },
];
