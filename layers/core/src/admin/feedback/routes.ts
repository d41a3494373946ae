/** `/v1/feedback`: create and update feedback (workspace keys and users only). */
import { parseWith, type AdminRoute } from '../route.ts';
import { createFeedbackSchema, updateFeedbackSchema } from './schema.ts';
import { FeedbackService } from './service.ts';

export const feedbackRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/feedback',
    scope: 'feedback.create',
    audit: { transactional: true },
    handler: async (ctx) => new FeedbackService(ctx.deps).create(ctx.principal, parseWith(createFeedbackSchema, await ctx.body())),
  },
  {
    method: 'PUT',
    path: '/v1/feedback/:id',
    scope: 'feedback.update',
    audit: { transactional: true },
    handler: async (ctx) => new FeedbackService(ctx.deps).update(ctx.principal, ctx.params.id ?? '', parseWith(updateFeedbackSchema, await ctx.body())),
  },
];
