/**
 * The rehearsal's Step Functions interpreter against AWS's documented semantics, on small
 * definitions and a recorded fake function: paths and templates, Choice, Map with MaxConcurrency,
 * Retry counts and backoff order, Catch with ResultPath, and a refusal of what it does not interpret.
 */
import { describe, expect, it } from 'vitest';
import { StateMachineInterpreter, type JsonValue, type LambdaAnswer, type Machine } from './step-functions.ts';

const INVOKE = 'arn:aws:states:::lambda:invoke';
const task = (payload: Record<string, JsonValue>, extra: Record<string, JsonValue> = {}) => ({
  Type: 'Task',
  Resource: INVOKE,
  Parameters: { FunctionName: 'arn:aws:lambda:us-east-1:123456789012:function:fn', Payload: payload },
  ...extra,
});

function recorder(answer: (payload: JsonValue, n: number) => LambdaAnswer | Promise<LambdaAnswer>) {
  const calls: JsonValue[] = [];
  let inFlight = 0;
  const seen = { peak: 0 };
  const interpreter = new StateMachineInterpreter({
    timeScale: 0,
    invoke: async (_fn, payload) => {
      calls.push(payload);
      inFlight++;
      seen.peak = Math.max(seen.peak, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      try {
        return await answer(payload, calls.length);
      } finally {
        inFlight--;
      }
    },
  });
  return { interpreter, calls, seen };
}

describe('the rehearsal Step Functions interpreter', () => {
  it('passes payload paths, selects and places results, chooses a branch and maps items within MaxConcurrency', async () => {
    const machine = {
      StartAt: 'Start',
      States: {
        Start: task(
          { action: 'start', 'id.$': '$.id' },
          { ResultSelector: { 'items.$': '$.Payload.items', 'status.$': '$.Payload.status' }, ResultPath: '$.start', Next: 'Pick' },
        ),
        Pick: { Type: 'Choice', Choices: [{ Variable: '$.start.status', StringEquals: 'go', Next: 'Each' }], Default: 'Done' },
        Each: {
          Type: 'Map',
          ItemsPath: '$.start.items',
          MaxConcurrency: 2,
          ItemSelector: { 'id.$': '$.id', 'item.$': '$$.Map.Item.Value', 'index.$': '$$.Map.Item.Index' },
          ItemProcessor: {
            ProcessorConfig: { Mode: 'INLINE' },
            StartAt: 'One',
            States: { One: task({ 'item.$': '$.item', 'index.$': '$.index' }, { End: true, ResultSelector: { 'v.$': '$.Payload' } }) },
          },
          ResultPath: '$.each',
          Next: 'Done',
        },
        Done: { Type: 'Succeed' },
      },
    } as unknown as Machine;
    const { interpreter, calls, seen } = recorder((p) => ({
      payload: (p as { action?: string }).action ? { items: [1, 2, 3, 4, 5], status: 'go' } : (p as { item: number }).item * 10,
    }));
    const trace = await interpreter.run(machine, { id: 'x' });
    expect(trace.status).toBe('SUCCEEDED');
    expect(calls[0]).toEqual({ action: 'start', id: 'x' });
    expect(calls.slice(1)).toHaveLength(5);
    expect(seen.peak).toBe(2);
    expect(trace.output).toEqual({ id: 'x', start: { items: [1, 2, 3, 4, 5], status: 'go' }, each: [10, 20, 30, 40, 50].map((v) => ({ v })) });
  });

  it('retries the matching error MaxAttempts times, then catches it into ResultPath and fails at a Fail state', async () => {
    const machine = {
      StartAt: 'Work',
      States: {
        Work: task(
          { 'id.$': '$.id' },
          {
            Retry: [
              { ErrorEquals: ['Other'], MaxAttempts: 5 },
              { ErrorEquals: ['Throttled'], IntervalSeconds: 1, MaxAttempts: 2, BackoffRate: 2 },
            ],
            Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Mark' }],
            Next: 'Ok',
          },
        ),
        Mark: task({ 'error.$': '$.error' }, { ResultPath: null, Next: 'Failed' }),
        Failed: { Type: 'Fail', Error: 'JobFailed', Cause: 'it failed' },
        Ok: { Type: 'Succeed' },
      },
    } as unknown as Machine;
    const { interpreter, calls } = recorder((_p, n) => (n <= 3 ? { errorType: 'Throttled', errorMessage: `try ${n}` } : { payload: null }));
    const trace = await interpreter.run(machine, { id: 'x' });
    expect(trace).toMatchObject({ status: 'FAILED', error: 'JobFailed', cause: 'it failed' });
    // One attempt and two retries (1 s, then 2 s), then the catch.
    expect(trace.events.filter((e) => e.includes('retried'))).toEqual([
      'Work retried after Throttled (attempt 2, 1s)',
      'Work retried after Throttled (attempt 3, 2s)',
    ]);
    expect(calls[3]).toEqual({ error: { Error: 'Throttled', Cause: JSON.stringify({ errorType: 'Throttled', errorMessage: 'try 3' }) } });
  });

  it('names a function that died Lambda.Unknown, fails a Map with its iteration error, and refuses what it does not interpret', async () => {
    const died = recorder(() => ({ died: 'exited' }));
    const mapped = {
      StartAt: 'Each',
      States: { Each: { Type: 'Map', ItemsPath: '$.items', ItemProcessor: { StartAt: 'One', States: { One: task({}, { End: true }) } }, End: true } },
    } as unknown as Machine;
    expect(await died.interpreter.run(mapped, { items: [1, 2] })).toMatchObject({ status: 'FAILED', error: 'Lambda.Unknown' });

    const wait = { StartAt: 'W', States: { W: { Type: 'Wait', Seconds: 1, End: true } } } as unknown as Machine;
    const refused = await recorder(() => ({ payload: null })).interpreter.run(wait, {});
    expect(refused).toMatchObject({ status: 'FAILED', error: 'States.Runtime' });
    expect(refused.cause).toContain('Wait');
  });
});
