/**
 * The Batch object Gantry answers, checked against OpenAI's published Batch schema (vendored in
 * test/support/openai-schemas): its usage carries the token details the schema requires and the
 * openai SDK types as always present, summed from the lines.
 */
import { describe, expect, it } from 'vitest';
import { batchObject } from '../../../../layers/core/src/batches/object.ts';
import type { BatchRecord } from '../../../../layers/core/src/store/batches.ts';
import { openaiSchemaErrors } from '../../../support/openai-schemas/validate.ts';

const record: BatchRecord = {
  id: 'batch_0000000001abcdef',
  organisation_id: 'org',
  workspace_id: 'ws',
  endpoint: '/v1/chat/completions',
  input_file_id: 'file-in',
  completion_window: 'immediate',
  status: 'completed',
  created_at: 1_800_000_000,
  in_progress_at: 1_800_000_001,
  finalizing_at: 1_800_000_002,
  completed_at: 1_800_000_003,
  expires_at: 1_800_086_400,
  output_file_id: 'file-out',
  total: 3,
  completed: 3,
  failed: 0,
  input_tokens: 27,
  output_tokens: 9,
  cached_tokens: 12,
  reasoning_tokens: 3,
  cost_micros: 10,
  metadata: { job: 'nightly' },
  sealed_headers: 'sealed',
};

describe('batchObject', () => {
  it("answers usage with OpenAI's token details, and matches OpenAI's Batch schema", () => {
    const b = batchObject(record);
    expect(b.usage).toEqual({
      input_tokens: 27,
      input_tokens_details: { cached_tokens: 12 },
      output_tokens: 9,
      output_tokens_details: { reasoning_tokens: 3 },
      total_tokens: 36,
    });
    expect(openaiSchemaErrors('Batch', b)).toEqual([]);
    expect(b).not.toHaveProperty('sealed_headers');
  });

  it('answers zero details for a batch recorded before they were kept, and matches the schema when failed', () => {
    const { cached_tokens: _c, reasoning_tokens: _r, ...old } = record;
    const failed = batchObject({
      ...old,
      status: 'failed',
      failed_at: 1_800_000_001,
      errors: [{ code: 'invalid_json_line', message: 'The line is not valid JSON.', param: null, line: 2 }],
      error_file_id: 'file-err',
      metadata: null,
    });
    expect(failed.usage).toMatchObject({ input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } });
    expect(failed.errors).toEqual({ object: 'list', data: [{ code: 'invalid_json_line', message: 'The line is not valid JSON.', param: null, line: 2 }] });
    expect(openaiSchemaErrors('Batch', failed)).toEqual([]);
  });
});
