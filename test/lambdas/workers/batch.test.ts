/**
 * Batches on AWS, without AWS: `POST /v1/batches` starts a Step Functions execution through the
 * StepFunctionsBatchRunner against a real HTTP server speaking the StartExecution wire format
 * (named after the batch; a second start is ExecutionAlreadyExists and changes nothing); the test
 * then plays the state machine's steps on the batch function's handler, against a real mock
 * provider on DynamoDB Local, to a completed batch; and the catch path's `fail` step.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchObject } from '../../../layers/core/src/batches/object.ts';
import { StepFunctionsBatchRunner } from '../../../layers/core/src/ports/aws/batch-runner-sfn.ts';
import { createBatchHandler } from '../../../lambdas/workers/batch/handler.ts';
import { startGantry, type TestGantry } from '../../support/gantry.ts';
import { startMockBatchProvider, type MockBatchProvider } from '../../support/mock-batch-provider.ts';
import { startMockServer, type MockServer } from '../../support/mock-http.ts';

type Json = Record<string, unknown>;
const ARN = 'arn:aws:states:eu-west-1:123456789012:stateMachine:Gantry-Batches';

let gw: TestGantry;
let provider: MockBatchProvider;
let sfn: MockServer;
let key: string;
const names = new Set<string>();

const chatLine = (id: string) =>
  JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: id }] } });
const headers = () => ({ 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${provider.url}/v1`, authorization: 'Bearer sk-provider' });

async function createBatch(lines: string[]): Promise<BatchObject> {
  const form = new FormData();
  form.append('file', new Blob([`${lines.join('\n')}\n`]), 'in.jsonl');
  form.append('purpose', 'batch');
  const file = (await (await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { 'x-gw-api-key': key }, body: form })).json()) as { id: string };
  const res = await fetch(`${gw.url}/v1/batches`, {
    method: 'POST',
    headers: { ...headers(), 'content-type': 'application/json' },
    body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: 'immediate' }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as BatchObject;
}
const get = async (id: string) => (await fetch(`${gw.url}/v1/batches/${id}`, { headers: { 'x-gw-api-key': key } })).json() as Promise<BatchObject>;

beforeAll(async () => {
  // Step Functions' JSON 1.0 protocol: a name already used is ExecutionAlreadyExists, as AWS answers.
  sfn = await startMockServer((req) => {
    const body = req.json as Json;
    const name = String(body.name);
    if (names.has(name))
      return {
        status: 400,
        headers: { 'content-type': 'application/x-amz-json-1.0' },
        json: { __type: 'ExecutionAlreadyExists', message: `Execution Already Exists: '${name}'` },
      };
    names.add(name);
    return {
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      json: { executionArn: `${ARN.replace('stateMachine', 'execution')}:${name}`, startDate: 1_795_000_000 },
    };
  });
  const runner = new StepFunctionsBatchRunner(ARN, { endpoint: sfn.url, region: 'eu-west-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
  [gw, provider] = await Promise.all([startGantry('direct', {}, { batchRunner: () => runner }), startMockBatchProvider()]);
  key = await gw.workspaceKey();
});
afterAll(async () => {
  await Promise.all([gw?.close(), provider?.close(), sfn?.close()]);
});

describe('batches on Step Functions', () => {
  it('starts one execution named after the batch; starting it again changes nothing', async () => {
    const batch = await createBatch([chatLine('a')]);
    const start = sfn.received.filter((r) => r.headers['x-amz-target'] === 'AWSStepFunctions.StartExecution');
    expect(start).toHaveLength(1);
    expect(start[0]!.json).toEqual({ stateMachineArn: ARN, name: batch.id, input: JSON.stringify({ batchId: batch.id }) });
    await expect(
      new StepFunctionsBatchRunner(ARN, { endpoint: sfn.url, region: 'eu-west-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } }).start(
        batch.id,
      ),
    ).resolves.toBeUndefined();
    expect(sfn.received).toHaveLength(2);
    expect((await get(batch.id)).status).toBe('validating');
  });

  it('runs a batch to completed through the state machine’s steps on the batch function', async () => {
    const handler = createBatchHandler(() => Promise.resolve(gw.deps));
    const batch = await createBatch(['a', 'b', 'c'].map(chatLine));
    const started = (await handler({ action: 'start', batchId: batch.id })) as { status: string; chunks: Array<{ start: number; end: number }> };
    expect(started).toMatchObject({ batchId: batch.id, status: 'in_progress', chunks: [{ start: 0, end: 3 }] });
    for (const chunk of started.chunks)
      expect(await handler({ action: 'chunk', batchId: batch.id, chunk, maxConcurrency: 2 })).toMatchObject({ ran: 3, skipped: 0 });
    // A redelivered chunk (a retried Map iteration) runs nothing twice.
    expect(await handler({ action: 'chunk', batchId: batch.id, chunk: started.chunks[0]!, maxConcurrency: 2 })).toMatchObject({ ran: 0, skipped: 3 });
    expect(await handler({ action: 'finalize', batchId: batch.id })).toMatchObject({ status: 'completed' });
    expect(await get(batch.id)).toMatchObject({ status: 'completed', request_counts: { total: 3, completed: 3, failed: 0 } });
    expect([...provider.calls.values()].every((n) => n === 1)).toBe(true);
  });

  it('marks the batch failed on the catch path, naming the failed step only, and leaves a final batch alone', async () => {
    const handler = createBatchHandler(() => Promise.resolve(gw.deps));
    const batch = await createBatch([chatLine('x')]);
    await handler({ action: 'start', batchId: batch.id });
    const failed = await handler({ action: 'fail', batchId: batch.id, error: { Error: 'Lambda.Unknown', Cause: 'secret-ish details sk-provider' } });
    expect(failed).toMatchObject({ status: 'failed' });
    const after = await get(batch.id);
    expect(after.status).toBe('failed');
    expect(JSON.stringify(after)).toContain('Lambda.Unknown');
    expect(JSON.stringify(after)).not.toContain('sk-provider');
    expect(await handler({ action: 'fail', batchId: batch.id })).toMatchObject({ status: 'failed' });
  });

  it('refuses a step without a batch id or with an unknown action, naming the field', async () => {
    const handler = createBatchHandler(() => Promise.resolve(gw.deps));
    await expect(handler({ action: 'start' } as never)).rejects.toMatchObject({ status: 400, param: 'batchId' });
    await expect(handler({ action: 'explode', batchId: 'batch_x' } as never)).rejects.toMatchObject({ status: 400, param: 'action' });
  });
});
