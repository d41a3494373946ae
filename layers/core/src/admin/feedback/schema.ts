/** Request bodies of the feedback routes (reference: `/feedback`). */
import * as z from 'zod';

const value = z.number({ error: 'is required and must be a number' }).int('must be an integer').min(-10, 'must be >= -10').max(10, 'must be <= 10');
const weight = z.number({ error: 'must be a number' }).min(0, 'must be >= 0').max(1, 'must be <= 1');
const metadata = z.record(z.string(), z.unknown(), { error: 'must be an object' });

export const createFeedbackSchema = z.object({
  trace_id: z.string({ error: 'is required and must be a string' }).min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
  value,
  weight: weight.optional(),
  metadata: metadata.nullish(),
});

export const updateFeedbackSchema = z.object({ value, weight: weight.optional(), metadata: metadata.nullish() });

export type CreateFeedbackBody = z.output<typeof createFeedbackSchema>;
export type UpdateFeedbackBody = z.output<typeof updateFeedbackSchema>;
