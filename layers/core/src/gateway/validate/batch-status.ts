/**
 * A provider's own batch (item 4 of docs/batches.md): its status mapped onto the batch states of docs/design/spec.md#states, whatever
 * the provider calls it (OpenAI and Azure already use it; others say RUNNING, SUCCESS, ended,
 * canceling...). The provider's word stays in `provider_status` when it differs.
 */
import { isRecord } from '../../http/json.ts';

const SPEC_STATUS: Readonly<Record<string, string>> = {
  validating: 'validating',
  queued: 'validating',
  pending: 'validating',
  submitted: 'validating',
  scheduled: 'validating',
  inprogress: 'in_progress',
  running: 'in_progress',
  processing: 'in_progress',
  finalizing: 'finalizing',
  completed: 'completed',
  complete: 'completed',
  success: 'completed',
  succeeded: 'completed',
  ended: 'completed',
  partiallycompleted: 'completed',
  failed: 'failed',
  failure: 'failed',
  error: 'failed',
  expired: 'expired',
  timeoutexceeded: 'expired',
  cancelling: 'cancelling',
  canceling: 'cancelling',
  cancellationrequested: 'cancelling',
  stopping: 'cancelling',
  cancelled: 'cancelled',
  canceled: 'cancelled',
  stopped: 'cancelled',
};

function mapOne(batch: Record<string, unknown>): Record<string, unknown> {
  const raw = typeof batch.status === 'string' ? batch.status : typeof batch.processing_status === 'string' ? batch.processing_status : undefined;
  if (raw === undefined) return batch;
  const status =
    SPEC_STATUS[
      raw
        .toLowerCase()
        .replace(/^job_state_/, '')
        .replace(/[^a-z]/g, '')
    ];
  if (!status || status === raw) return batch;
  return { ...batch, status, provider_status: raw };
}

/** A batch, or a list of them, with the statuses of docs/design/spec.md#states. */
export function mapBatchStatus(answer: Record<string, unknown>): Record<string, unknown> {
  if (Array.isArray(answer.data)) return { ...answer, data: answer.data.map((b: unknown) => (isRecord(b) ? mapOne(b) : b)) };
  return mapOne(answer);
}
