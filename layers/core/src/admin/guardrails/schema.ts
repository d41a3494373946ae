/**
 * Request bodies of `/v1/guardrails`. Check ids and parameters are validated by each check's own
 * rules (guardrails/registry.ts) in the service; actions are normalised there from either shape.
 * Unknown fields are refused by `withBody` (admin/body.ts), naming the nearest known one.
 */
import * as z from 'zod';

const name = z.string().trim().min(1).max(255);

const check = z.object({
  id: z.string().min(1).max(128),
  parameters: z.record(z.string(), z.unknown()).optional(),
  is_enabled: z.boolean().optional(),
});

const checks = z.array(check).min(1, 'must hold at least one check').max(50, 'must hold at most 50 checks');
const actions = z.record(z.string(), z.unknown());

export const createGuardrailSchema = z.object({
  name,
  checks,
  actions,
  workspace_id: z.string().min(1).optional(),
  organisation_id: z.string().min(1).optional(),
});

export const updateGuardrailSchema = z
  .strictObject({ name: name.optional(), checks: checks.optional(), actions: actions.optional(), status: z.enum(['active', 'archived']).optional() })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one of name, checks, actions, status' });

export type CreateGuardrailBody = z.output<typeof createGuardrailSchema>;
export type UpdateGuardrailBody = z.output<typeof updateGuardrailSchema>;
export type CheckBody = z.output<typeof check>;
