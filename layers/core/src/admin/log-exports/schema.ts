/** Bodies of the log export routes (reference: GenerationsFilterSchema, LogExportsRequestedData). */
import * as z from 'zod';
import { FILTER_NAMES } from '../../observability/filters.ts';
import { EXPORT_COLUMNS } from '../../observability/log-views.ts';

/** Filter names an export accepts: the log filters, plus the export window and the workspace. */
export const EXPORT_FILTER_NAMES: ReadonlySet<string> = new Set([
  ...FILTER_NAMES,
  'workspace_slug',
  'page_size',
  'current_page',
  'weighted_feedback_min',
  'weighted_feedback_max',
]);

const filters = z.record(z.string(), z.unknown()).superRefine((f, ctx) => {
  for (const k of Object.keys(f)) {
    if (!EXPORT_FILTER_NAMES.has(k) && !k.startsWith('metadata.')) ctx.addIssue({ code: 'custom', path: [k], message: 'unknown filter' });
  }
  const size = f.page_size;
  if (size !== undefined && (typeof size !== 'number' || !Number.isInteger(size) || size < 1 || size > 50_000)) {
    ctx.addIssue({ code: 'custom', path: ['page_size'], message: 'must be an integer from 1 to 50000' });
  }
  const pageNo = f.current_page;
  if (pageNo !== undefined && (typeof pageNo !== 'number' || !Number.isInteger(pageNo) || pageNo < 0)) {
    ctx.addIssue({ code: 'custom', path: ['current_page'], message: 'must be an integer >= 0' });
  }
});

const requestedData = z.array(z.enum(EXPORT_COLUMNS)).min(1);

export const createExportSchema = z.object({
  workspace_id: z.string().min(1).optional(),
  filters,
  requested_data: requestedData,
  description: z.string().max(1024).optional(),
});

export const updateExportSchema = z.object({
  workspace_id: z.string().min(1).optional(),
  filters,
  requested_data: requestedData.optional(),
  description: z.string().max(1024).optional(),
});

export type CreateExportBody = z.output<typeof createExportSchema>;
export type UpdateExportBody = z.output<typeof updateExportSchema>;
