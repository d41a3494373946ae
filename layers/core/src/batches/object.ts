/** The Batch object of docs/design/spec.md#answers-gantry-shapes (OpenAI's shape) from a batch record. */
import type { BatchRecord, BatchStatus, BatchUsage } from '../store/batches.ts';

export interface BatchObject {
  id: string;
  object: 'batch';
  endpoint: string;
  errors: { object: 'list'; data: BatchRecord['errors'] & object } | null;
  input_file_id: string;
  completion_window: string;
  status: BatchStatus;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  in_progress_at: number | null;
  expires_at: number;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  request_counts: { total: number; completed: number; failed: number };
  /** The sum of the lines' usage, details included (OpenAI's schema requires them); each line's request log has its own. */
  usage: BatchUsage;
  metadata: Record<string, string> | null;
}

export function batchObject(b: BatchRecord): BatchObject {
  return {
    id: b.id,
    object: 'batch',
    endpoint: b.endpoint,
    errors: b.errors?.length ? { object: 'list', data: b.errors } : null,
    input_file_id: b.input_file_id,
    completion_window: b.completion_window,
    status: b.status,
    output_file_id: b.output_file_id ?? null,
    error_file_id: b.error_file_id ?? null,
    created_at: b.created_at,
    in_progress_at: b.in_progress_at ?? null,
    expires_at: b.expires_at,
    finalizing_at: b.finalizing_at ?? null,
    completed_at: b.completed_at ?? null,
    failed_at: b.failed_at ?? null,
    expired_at: b.expired_at ?? null,
    cancelling_at: b.cancelling_at ?? null,
    cancelled_at: b.cancelled_at ?? null,
    request_counts: { total: b.total, completed: b.completed, failed: b.failed },
    usage: {
      input_tokens: b.input_tokens,
      input_tokens_details: { cached_tokens: b.cached_tokens ?? 0 },
      output_tokens: b.output_tokens,
      output_tokens_details: { reasoning_tokens: b.reasoning_tokens ?? 0 },
      total_tokens: b.input_tokens + b.output_tokens,
    },
    metadata: b.metadata,
  };
}
