/** Admin bodies refuse unknown fields, for every create and update, naming the nearest known field. */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { parseBody, unknownFieldProblems } from '../../../../layers/core/src/admin/body.ts';
import { ADMIN_ROUTES } from '../../../../layers/core/src/admin/routes.ts';
import { createApiKeySchema } from '../../../../layers/core/src/admin/api-keys/schema.ts';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';

// Routes that act on a resource without a body (`POST .../archive`).
const ACTIONS = new Set(['archive', 'resend', 'start', 'cancel', 'reset']);
// Custom logs are records imported from elsewhere: one or a batch, passed on as they come. A render
// takes the rendered request's hyperparameters at the root, as the reference's clients send them.
const OPEN_BODIES = new Set(['POST /v1/logs', 'POST /v1/prompts/:promptId/render']);

const writes = ADMIN_ROUTES.filter((r) => r.method === 'POST' || r.method === 'PUT' || r.method === 'PATCH');

function refusal(schema: z.ZodType, value: unknown): ValidationError {
  try {
    parseBody(schema, value);
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('accepted');
}

describe('admin bodies', () => {
  it('every create and update declares its body schema (actions excepted)', () => {
    const undeclared = writes.filter((r) => !r.body && !ACTIONS.has(r.path.split('/').at(-1) ?? '')).map((r) => `${r.method} ${r.path}`);
    expect(undeclared).toEqual([]);
  });

  it.each(writes.filter((r) => r.body && !OPEN_BODIES.has(`${r.method} ${r.path}`)).map((r) => [`${r.method} ${r.path}`, r.body as z.ZodType]))(
    '%s refuses an unknown field',
    (_name, schema) => {
      const problems = unknownFieldProblems(schema, { expire_at: '2030-01-01T00:00:00Z' });
      expect(problems).toHaveLength(1);
      expect(problems[0]?.path).toBe('');
      expect(problems[0]?.message).toMatch(/^unknown field expire_at; (did you mean|known fields)/);
    },
  );

  it('suggests the nearest known field', () => {
    const err = refusal(createApiKeySchema, { name: 'k', scopes: ['completions.write'], expire_at: '2030-01-01T00:00:00Z', rate_limit: [] });
    expect(err.code).toBe('AB01');
    expect(err.problems).toEqual([
      { path: '', message: 'unknown field expire_at; did you mean expires_at?' },
      { path: '', message: 'unknown field rate_limit; did you mean rate_limits?' },
    ]);
    expect(err.message).toBe('unknown field expire_at; did you mean expires_at?; unknown field rate_limit; did you mean rate_limits?');
  });

  it('lists the known fields when none is near', () => {
    const schema = z.object({ name: z.string(), value: z.number() });
    expect(refusal(schema, { name: 'a', value: 1, colour: 'red' }).problems).toEqual([
      { path: '', message: 'unknown field colour; known fields: name, value' },
    ]);
  });

  it('looks into nested objects and arrays the schema describes, and not into open records', () => {
    const schema = z.object({
      limits: z.array(z.object({ unit: z.string(), value: z.number() })).optional(),
      metadata: z.record(z.string(), z.unknown()).optional(),
      extra: z.looseObject({ a: z.number() }).optional(),
    });
    const body = {
      limits: [
        { unit: 'rpm', value: 1 },
        { unit: 'rpm', valeu: 2 },
      ],
      metadata: { anything: 1 },
      extra: { b: 2 },
    };
    expect(unknownFieldProblems(schema, body)).toEqual([{ path: 'limits[1]', message: 'unknown field valeu; did you mean value?' }]);
  });

  it('sees through defaults, transforms and refinements', () => {
    const schema = z
      .object({ is_default: z.boolean().default(false), name: z.string().transform((s) => s.trim()) })
      .refine(() => true)
      .transform((b) => b)
      .optional();
    expect(unknownFieldProblems(schema, { name: 'x', is_defualt: true })).toEqual([
      { path: '', message: 'unknown field is_defualt; did you mean is_default?' },
    ]);
    expect(parseBody(z.object({ a: z.number() }), { a: 1 })).toEqual({ a: 1 });
  });
});
