/** Answers of the prompt resources: collections, labels, partials, prompts and their versions, rendering. */
import * as z from 'zod';
import type { CollectionService } from '../../admin/collections/service.ts';
import type { LabelService } from '../../admin/labels/service.ts';
import type { PartialService } from '../../admin/prompt-partials/service.ts';
import type { PromptService } from '../../admin/prompts/service.ts';
import { answerOf, isoTime, nullableString } from './common.ts';

type Returns<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;
type Item<T> = T extends readonly (infer I)[] ? I : never;

const record = z.record(z.string(), z.unknown());
const status = z.enum(['active', 'archived']);

const collectionDetails = z.object({
  child_collections_count: z.number().int(),
  prompts_count: z.number().int(),
  child_collections_last_updated_at: nullableString,
  prompts_last_updated_at: nullableString,
});

const collectionShape = {
  object: z.literal('collection'),
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  organisation_id: z.string(),
  workspace_id: z.string(),
  parent_collection_id: nullableString,
  is_default: z.boolean(),
  status,
  created_at: isoTime,
  last_updated_at: isoTime,
  collection_details: collectionDetails,
};

export const collectionSummary = answerOf<Item<Returns<CollectionService['list']>>>()(z.object(collectionShape));

export const collectionView = answerOf<Returns<CollectionService['detail']>>()(
  z.object({
    ...collectionShape,
    child_collections: z.array(
      z.object({ id: z.string(), name: z.string(), slug: z.string(), last_updated_at: isoTime, collection_details: collectionDetails }),
    ),
  }),
);

export const collectionCreated = answerOf<Returns<CollectionService['create']>>()(z.object({ id: z.string(), slug: z.string(), object: z.string() }));

export const labelView = answerOf<Returns<LabelService['detail']>>()(
  z.object({
    object: z.literal('label'),
    id: z.string(),
    name: z.string(),
    description: nullableString,
    color_code: nullableString,
    organisation_id: z.string(),
    workspace_id: nullableString,
    is_universal: z.boolean(),
    status: z.literal('active'),
    created_at: isoTime,
    last_updated_at: isoTime,
  }),
);

export const labelCreated = answerOf<Returns<LabelService['create']>>()(z.object({ id: z.string(), object: z.string() }));

const partialHead = {
  object: z.literal('partial'),
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  workspace_id: z.string(),
  collection_id: z.null(),
  status,
  default_version: z.number().int(),
  latest_version: z.number().int(),
  created_at: isoTime,
  last_updated_at: isoTime,
};

export const partialSummary = answerOf<Item<Returns<PartialService['list']>>>()(z.object(partialHead));

export const partialView = answerOf<Returns<PartialService['detail']>>()(
  z.object({
    ...partialHead,
    string: z.string(),
    version: z.number().int(),
    version_description: nullableString,
    prompt_partial_version_id: z.string(),
    prompt_partial_version_status: z.string(),
  }),
);

export const partialCreated = answerOf<Returns<PartialService['create']>>()(
  z.object({ id: z.string(), slug: z.string(), version_id: z.string(), object: z.string() }),
);

export const partialUpdated = answerOf<Returns<PartialService['update']>>()(
  z.object({
    id: z.string(),
    slug: z.string(),
    prompt_partial_version_id: z.string(),
    version: z.number().int().optional().describe('Absent when nothing changed (no new version)'),
    object: z.string(),
  }),
);

export const partialVersion = answerOf<Item<Returns<PartialService['versions']>>>()(
  z.object({
    object: z.literal('partial'),
    prompt_partial_id: z.string(),
    prompt_partial_version_id: z.string(),
    slug: z.string(),
    version: z.number().int(),
    string: z.string(),
    description: nullableString,
    prompt_version_status: z.string(),
    created_at: isoTime,
  }),
);

export const promptSummary = answerOf<Item<Returns<PromptService['summaries']>>>()(
  z.object({
    object: z.literal('prompt'),
    id: z.string(),
    slug: z.string(),
    workspace_id: z.string(),
    latest_version: z.number().int(),
    default_version: z.number().int(),
    name: z.string(),
    collection_id: z.string(),
    status,
    created_at: isoTime,
    last_updated_at: isoTime,
    model: nullableString,
  }),
);

const templateShape = {
  string: z.string(),
  parameters: record,
  model: nullableString,
  provider: nullableString,
  virtual_key: nullableString,
  functions: z.array(z.unknown()).nullable(),
  tools: z.array(z.unknown()).nullable(),
  tool_choice: z.unknown(),
  is_raw_template: z.boolean(),
  template_metadata: record,
};

export const promptView = answerOf<Returns<PromptService['detail']>>()(
  z.object({
    ...templateShape,
    object: z.literal('prompt'),
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    collection_id: z.string(),
    workspace_id: z.string(),
    prompt_version: z.number().int(),
    prompt_version_id: z.string(),
    prompt_version_status: z.string(),
    prompt_version_description: nullableString,
    prompt_version_label_id: nullableString,
    prompt_version_labels: z.array(z.string()),
    default_version: z.number().int(),
    latest_version: z.number().int(),
    status,
    created_at: isoTime,
    last_updated_at: isoTime,
  }),
);

export const promptCreated = answerOf<Returns<PromptService['create']>>()(
  z.object({ id: z.string(), slug: z.string(), version_id: z.string(), object: z.string() }),
);

export const promptUpdated = answerOf<Returns<PromptService['update']>>()(
  z.object({ id: z.string(), slug: z.string(), prompt_version_id: z.string(), prompt_version: z.number().int(), object: z.string() }),
);

export const promptVersion = answerOf<Item<Returns<PromptService['versions']>>>()(
  z.object({
    object: z.literal('prompt'),
    id: z.string(),
    prompt_id: z.string(),
    prompt_version: z.number().int(),
    prompt_description: nullableString,
    prompt_template: z.object(templateShape),
    label_id: nullableString,
    labels: z.array(z.string()),
    status: z.string(),
    created_at: isoTime,
  }),
);

/** The rendered request (admin/prompt-render/routes.ts). */
export const promptRendered = answerOf<{ success: true; data: Record<string, unknown> }>()(
  z.object({ success: z.literal(true), data: record.describe('The chat request the prompt renders to') }),
);
