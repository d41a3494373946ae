/**
 * Prompts and prompt partials: versioned heads (store/versioned.ts). A prompt's head also holds its
 * label pointers (label id -> version number), so moving a label, publishing a version and deleting
 * the prompt each change one item and cannot leave a pointer behind.
 */
import { VersionedRepository, versionedEntities, type HeadBase, type VersionBase } from './versioned.ts';
import type { TableClient } from './repositories.ts';

export type PromptStatus = 'active' | 'archived';

export interface PromptRecord extends HeadBase {
  name: string;
  collection_id: string;
  status: PromptStatus;
  /** Label id -> the version it is on. */
  labels: Record<string, number>;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

/** One immutable version of a prompt: the template and everything a render needs. */
export interface PromptVersionRecord extends VersionBase {
  prompt_id: string;
  string: string;
  parameters: Record<string, unknown>;
  model: string | null;
  /** A managed provider slug, stored with its `@`. */
  provider: string | null;
  /** A legacy virtual key slug. */
  virtual_key: string | null;
  functions: unknown[] | null;
  tools: unknown[] | null;
  tool_choice: unknown;
  is_raw_template: boolean;
  template_metadata: Record<string, unknown>;
  version_description: string | null;
  created_at: string;
  created_by: string | null;
}

export interface PartialRecord extends HeadBase {
  name: string;
  status: PromptStatus;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

export interface PartialVersionRecord extends VersionBase {
  partial_id: string;
  string: string;
  version_description: string | null;
  created_at: string;
  created_by: string | null;
}

export const PromptEntities = versionedEntities<PromptRecord, PromptVersionRecord>('PROMPT', (v) => v.prompt_id);
export const PartialEntities = versionedEntities<PartialRecord, PartialVersionRecord>('PARTIAL', (v) => v.partial_id);

export class PromptRepository extends VersionedRepository<PromptRecord, PromptVersionRecord> {
  constructor(t: TableClient) {
    super(t, PromptEntities, 'prompt');
  }
}

export class PartialRepository extends VersionedRepository<PartialRecord, PartialVersionRecord> {
  constructor(t: TableClient) {
    super(t, PartialEntities, 'prompt partial');
  }
}
