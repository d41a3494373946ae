/**
 * Feedback on a traced request (by `trace_id`, the gateway's `x-gw-trace-id`): created and updated
 * by workspace keys and users of the workspace. Admin keys cannot (docs/design/spec.md#roles-and-keys): feedback belongs to
 * a workspace, which organisation principals do not have.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { NotFoundError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { FeedbackRepository, type FeedbackRecord } from '../../store/feedback.ts';
import type { CreateFeedbackBody, UpdateFeedbackBody } from './schema.ts';

export interface FeedbackAnswer {
  status: 'success';
  message: string;
  feedback_ids: string[];
}

export class FeedbackService {
  readonly #deps: CoreDeps;
  readonly #repo: FeedbackRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#repo = new FeedbackRepository(deps.repos.table);
  }

  /** Route authorization lets only workspace principals here. */
  #workspace(caller: Principal): string {
    if (!caller.workspaceId) throw new NotFoundError('Feedback belongs to a workspace: use a workspace key');
    return caller.workspaceId;
  }

  async create(caller: Principal, body: CreateFeedbackBody): Promise<FeedbackAnswer> {
    const now = new Date(this.#deps.clock.now()).toISOString();
    const record: FeedbackRecord = {
      id: randomUUID(),
      organisation_id: caller.organisationId,
      workspace_id: this.#workspace(caller),
      trace_id: body.trace_id,
      value: body.value,
      weight: body.weight ?? 1,
      metadata: body.metadata ?? null,
      created_at: now,
      last_updated_at: now,
      created_by: caller.keyId,
      last_updated_by: caller.keyId,
    };
    auditTarget(record.id, record.workspace_id);
    await this.#repo.create(record);
    return { status: 'success', message: 'Feedback created', feedback_ids: [record.id] };
  }

  async update(caller: Principal, id: string, body: UpdateFeedbackBody): Promise<FeedbackAnswer> {
    const current = await this.#repo.get(this.#workspace(caller), id);
    if (!current) throw new NotFoundError(`Feedback ${id} not found`);
    auditTarget(id, current.workspace_id);
    await this.#repo.update({
      ...current,
      value: body.value,
      ...(body.weight !== undefined ? { weight: body.weight } : {}),
      ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
      last_updated_at: new Date(this.#deps.clock.now()).toISOString(),
      last_updated_by: caller.keyId,
    });
    return { status: 'success', message: 'Feedback updated', feedback_ids: [id] };
  }
}
