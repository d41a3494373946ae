/** Bodies and query parameters of the logs routes. */
import * as z from 'zod';

const headers = z.record(z.string(), z.string()).optional();

export const customLogSchema = z.object({
  request: z.object({
    url: z.string().min(1).max(2048),
    method: z.string().min(1).max(16).optional(),
    headers,
    body: z.unknown().optional(),
  }),
  response: z.object({
    status: z.number().int().min(100).max(599).default(200),
    headers,
    body: z.unknown().optional(),
    response_time: z.number().min(0).optional(),
  }),
  metadata: z.record(z.string().max(128), z.unknown()).optional(),
});

/** One log or up to 100 at once, as the reference API allows both. */
export const insertLogsSchema = z.union([customLogSchema, z.array(customLogSchema).min(1).max(100)]);

export const listQuerySchema = z.object({
  page_size: z.coerce.number({ error: 'must be an integer' }).int('must be an integer').min(1, 'must be >= 1').max(100, 'must be <= 100').default(50),
  cursor: z.string().min(1).max(512).optional(),
});

export type CustomLogBody = z.output<typeof customLogSchema>;
