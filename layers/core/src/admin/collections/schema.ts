/** Request bodies of `/v1/collections`; unknown fields are refused by `withBody` (admin/body.ts). */
import * as z from 'zod';
import { nameSchema } from '../prompts/common.ts';

export const createCollectionSchema = z.object({
  name: nameSchema,
  workspace_id: z.string().min(1).optional(),
  parent_collection_id: z.string().min(1).optional(),
});

export const updateCollectionSchema = z.object({ name: nameSchema });

export type CreateCollectionBody = z.output<typeof createCollectionSchema>;
export type UpdateCollectionBody = z.output<typeof updateCollectionSchema>;
