/**
 * The batch state machine as synthesized: its ASL definition (tokens replaced by sample ARNs) is
 * valid for asl-validator and has the states, Map concurrency, retries and catch path the batch
 * runtime relies on; the grants are least privilege and the app stays cdk-nag clean.
 */
import { createRequire } from 'node:module';
import { Stack, type CfnResource } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type GantryApp } from '../../infra/app-builder.ts';
import { BATCH_CHUNK_CONCURRENCY, BATCH_CHUNK_RERUNS, BATCH_LINE_CONCURRENCY, BATCH_THROTTLE_RETRIES } from '../../infra/stacks/batches-stack.ts';
import { BATCH_THROTTLED } from '../../layers/core/src/batches/steps.ts';

const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };
const aslValidator = createRequire(import.meta.url)('asl-validator') as (definition: unknown) => { isValid: boolean; errors: unknown[] };

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- ASL documents are walked freely in assertions

function logicalId(construct: { node: { defaultChild?: unknown } }): string {
  const child = construct.node.defaultChild as CfnResource;
  return Stack.of(child).getLogicalId(child);
}

/** The definition with every CloudFormation token replaced by a sample value (the partition, the function's ARN). */
function definitionOf(template: Template): Json {
  const [machine] = Object.values(template.findResources('AWS::StepFunctions::StateMachine')) as { Properties: { DefinitionString: unknown } }[];
  const def = machine!.Properties.DefinitionString as string | { 'Fn::Join': [string, unknown[]] };
  const sample = (token: unknown) => (JSON.stringify(token).includes('AWS::Partition') ? 'aws' : 'arn:aws:lambda:eu-west-1:123456789012:function:gantry-batch');
  const text = typeof def === 'string' ? def : def['Fn::Join'][1].map((p) => (typeof p === 'string' ? p : sample(p))).join('');
  return JSON.parse(text) as Json;
}

describe('BatchesStack', () => {
  let gantry: GantryApp;
  let template: Template;
  let asl: Json;

  beforeAll(() => {
    // Synthesizing runs the cdk-nag plugins too: an unacknowledged finding fails here.
    gantry = buildApp({ appProps: { context: NO_BUNDLING } });
    template = Template.fromStack(gantry.batches);
    asl = definitionOf(template);
  });

  it('synthesizes a definition asl-validator accepts', () => {
    const result = aslValidator(asl);
    expect(result.errors).toEqual([]);
    expect(result.isValid).toBe(true);
  });

  it('starts, maps over the chunks with bounded concurrency, finalizes, and has a catch path that marks the batch failed', () => {
    expect(asl.StartAt).toBe('Start');
    const s = asl.States as Json;
    expect(Object.keys(s).sort()).toEqual(['BatchFailed', 'Chunks', 'Done', 'Finalize', 'MarkFailed', 'Start', 'Validated']);
    expect(s.Start).toMatchObject({ Type: 'Task', Next: 'Validated', Parameters: { Payload: { action: 'start', 'batchId.$': '$.batchId' } } });
    expect(s.Validated.Choices).toEqual([
      { Variable: '$.start.status', StringEquals: 'in_progress', Next: 'Chunks' },
      { Variable: '$.start.status', StringEquals: 'failed', Next: 'Done' },
    ]);
    expect(s.Validated.Default).toBe('Finalize');
    expect(s.Chunks).toMatchObject({ Type: 'Map', ItemsPath: '$.start.chunks', MaxConcurrency: BATCH_CHUNK_CONCURRENCY, Next: 'Finalize' });
    const chunk = s.Chunks.ItemProcessor.States.RunChunk;
    expect(chunk.Parameters.Payload).toEqual({ action: 'chunk', 'batchId.$': '$.batchId', 'chunk.$': '$.chunk', maxConcurrency: BATCH_LINE_CONCURRENCY });
    expect(chunk.Retry).toContainEqual({
      ErrorEquals: [BATCH_THROTTLED],
      IntervalSeconds: 5,
      BackoffRate: 2,
      MaxAttempts: BATCH_THROTTLE_RETRIES,
      MaxDelaySeconds: 300,
    });
    // A chunk whose function died (timeout, out of memory) runs again; its lines in flight run once more.
    expect(chunk.Retry).toContainEqual({ ErrorEquals: ['Lambda.Unknown', 'Sandbox.Timedout'], IntervalSeconds: 5, MaxAttempts: BATCH_CHUNK_RERUNS });
    expect(s.Finalize).toMatchObject({ Next: 'Done', Parameters: { Payload: { action: 'finalize' } } });
    for (const name of ['Start', 'Chunks', 'Finalize'])
      expect(s[name].Catch).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'MarkFailed' }]);
    expect(s.MarkFailed).toMatchObject({ Next: 'BatchFailed', Parameters: { Payload: { action: 'fail', 'error.$': '$.error' } } });
    expect(s.BatchFailed.Type).toBe('Fail');
  });

  it('logs every event without execution data, traces, and alarms on failed executions', () => {
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      StateMachineType: 'STANDARD',
      TracingConfiguration: { Enabled: true },
      LoggingConfiguration: { Level: 'ALL', IncludeExecutionData: false },
    });
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as { Properties: Json }[];
    expect(alarms.map((a) => a.Properties.MetricName).sort()).toEqual(['Errors', 'ExecutionsFailed', 'ExecutionsTimedOut']);
  });

  it('lets the state machine invoke the batch function only, and the gateway start executions of this state machine only', () => {
    const fnId = logicalId(gantry.batches.fn);
    const policies = Object.values(template.findResources('AWS::IAM::Policy')) as { Properties: { PolicyDocument: { Statement: Json[] } } }[];
    const invoke = policies.flatMap((p) => p.Properties.PolicyDocument.Statement).filter((st) => JSON.stringify(st.Action).includes('lambda:InvokeFunction'));
    expect(invoke).toHaveLength(1);
    expect(JSON.stringify(invoke[0]!.Resource)).toContain(fnId);
    const api = Template.fromStack(gantry.api);
    const inline = (Object.values(api.findResources('AWS::IAM::Role')) as { Properties: { Policies?: { PolicyDocument: { Statement: Json[] } }[] } }[]).flatMap(
      (r) => r.Properties.Policies ?? [],
    );
    const attached = Object.values(api.findResources('AWS::IAM::Policy')) as {
      PolicyDocument?: unknown;
      Properties: { PolicyDocument: { Statement: Json[] } };
    }[];
    const apiStatements = [...inline, ...attached.map((p) => p.Properties)].flatMap((p) => p.PolicyDocument.Statement);
    const start = apiStatements.filter((st) => JSON.stringify(st.Action).includes('states:'));
    expect(start).toHaveLength(1);
    expect(start[0]!.Action).toBe('states:StartExecution');
    expect(JSON.stringify(start[0]!.Resource)).toContain('Gantry-Batches');
    const gateway = api.findResources('AWS::Lambda::Function')[logicalId(gantry.api.gateway)] as { Properties: { Environment: { Variables: Json } } };
    expect(gateway.Properties.Environment.Variables.BATCH_STATE_MACHINE_ARN).toBeDefined();
  });
});
