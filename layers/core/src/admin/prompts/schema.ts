/**
 * Request bodies of `/v1/prompts`. `string` is the Mustache template; `provider` a managed provider
 * slug (`@openai-prod`) and `virtual_key` a legacy virtual key (one of them at most). Unknown
 * fields are refused by `withBody` (admin/body.ts), naming the nearest known one.
 */
import * as z from 'zod';
import { nameSchema } from './common.ts';

/** DynamoDB stores at most 32 levels of nesting in an item; a version's fields sit two levels down. */
const MAX_DEPTH = 24;

/** How deep a JSON value nests, counted no further than `limit` + 1 (the recursion stays bounded). */
function depthOf(v: unknown, limit = MAX_DEPTH): number {
  if (typeof v !== 'object' || v === null) return 0;
  if (limit <= 0) return 1;
  let deepest = 0;
  for (const x of Object.values(v)) deepest = Math.max(deepest, depthOf(x, limit - 1));
  return deepest + 1;
}

const shallow = (v: unknown) => depthOf(v) <= MAX_DEPTH;
const tooDeep = `must nest at most ${MAX_DEPTH} levels`;

const object = z.record(z.string(), z.unknown(), { error: 'must be an object' }).refine(shallow, tooDeep);
export const templateSchema = z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(100_000, 'must be at most 100000 characters');
const model = z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(256, 'must be at most 256 characters');
const slugLike = z.string({ error: 'must be a string' }).regex(/^@?[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be a slug such as @openai-prod');
const toolList = z.array(object, { error: 'must be an array of objects' }).max(128, 'must hold at most 128 items');
const toolChoice = z.union([z.enum(['none', 'auto', 'required']), object], { error: 'must be none, auto, required or an object' });
const rawFlag = z.union([z.boolean(), z.literal(0), z.literal(1)], { error: 'must be a boolean (or 0/1)' }).transform((v) => v === true || v === 1);
export const versionDescriptionSchema = z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters');

const oneProvider = (b: { provider?: string | null | undefined; virtual_key?: string | null | undefined }) => !(b.provider && b.virtual_key);
const oneProviderRule = { path: ['virtual_key'], message: 'give provider or virtual_key, not both' };

export const createPromptSchema = z
  .object({
    name: nameSchema,
    collection_id: z.string({ error: 'is required and must be a string' }).min(1, 'must not be empty'),
    string: templateSchema,
    parameters: object,
    provider: slugLike.optional(),
    virtual_key: slugLike.optional(),
    model: model.optional(),
    functions: toolList.optional(),
    tools: toolList.optional(),
    tool_choice: toolChoice.optional(),
    is_raw_template: rawFlag.optional(),
    version_description: versionDescriptionSchema.optional(),
    template_metadata: object.optional(),
  })
  .refine(oneProvider, oneProviderRule);

/** Version fields: sending any of them makes a new version. */
export const VERSION_FIELDS = [
  'string',
  'parameters',
  'model',
  'provider',
  'virtual_key',
  'functions',
  'tools',
  'tool_choice',
  'is_raw_template',
  'version_description',
  'template_metadata',
  'prompt_metadata',
] as const;

export const updatePromptSchema = z
  .object({
    patch: z.boolean({ error: 'must be a boolean' }).optional(),
    name: nameSchema.optional(),
    collection_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
    string: templateSchema.optional(),
    parameters: object.optional(),
    model: model.nullable().optional(),
    provider: slugLike.nullable().optional(),
    virtual_key: slugLike.nullable().optional(),
    functions: toolList.nullable().optional(),
    tools: toolList.nullable().optional(),
    tool_choice: toolChoice.nullable().optional(),
    is_raw_template: rawFlag.optional(),
    version_description: versionDescriptionSchema.nullable().optional(),
    template_metadata: object.optional(),
    /** The reference's name for `template_metadata` on update. */
    prompt_metadata: object.optional(),
  })
  .refine(oneProvider, oneProviderRule)
  .refine((b) => b.template_metadata === undefined || b.prompt_metadata === undefined, {
    path: ['prompt_metadata'],
    message: 'give template_metadata or prompt_metadata, not both',
  })
  .refine((b) => b.name !== undefined || b.collection_id !== undefined || VERSION_FIELDS.some((f) => b[f] !== undefined), {
    message: `must change at least one of name, collection_id, ${VERSION_FIELDS.join(', ')}`,
  });

export const labelVersionSchema = z.object({ label_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty') });

export const makeDefaultSchema = z.object({ version: z.number({ error: 'must be a number' }).int('must be an integer').min(1, 'must be >= 1') });

export type CreatePromptBody = z.output<typeof createPromptSchema>;
export type UpdatePromptBody = z.output<typeof updatePromptSchema>;
