/**
 * Gantry-Mcp: the mcp-sync queue with its dead-letter queue and alarms, the worker consuming it,
 * and least privilege on both sides (the worker: items, decrypt, its queue; the admin function:
 * SendMessage only). Synthesizing runs the cdk-nag packs: an unacknowledged finding fails here.
 */
import { Stack, type CfnResource } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type GantryApp } from '../../infra/app-builder.ts';
import { ITEM_ACTIONS } from '../../infra/stacks/data-stack.ts';
import { MCP_SYNC_BATCH_SIZE, MCP_SYNC_MAX_RECEIVES, MCP_SYNC_TIMEOUT } from '../../infra/stacks/mcp-stack.ts';

const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };
type Json = Record<string, unknown>;
type Statement = { Action: string | string[]; Resource: unknown; Effect: string };

const logicalId = (construct: { node: { defaultChild?: unknown } }): string => {
  const child = construct.node.defaultChild as CfnResource;
  return Stack.of(child).getLogicalId(child);
};
/** Every statement of the policies attached to a role. */
const statementsOf = (template: Template, roleId: string): Statement[] =>
  Object.values(template.findResources('AWS::IAM::Policy') as Record<string, { Properties: Json }>)
    .filter((p) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
const actions = (statements: Statement[]): string[] => statements.flatMap((s) => [s.Action].flat()).sort();

describe('McpStack', () => {
  let gantry: GantryApp;
  let template: Template;

  beforeAll(() => {
    gantry = buildApp({ appProps: { context: { ...NO_BUNDLING, 'gantry:prefix': 'Staging' } } });
    template = Template.fromStack(gantry.mcp);
  });

  it('keeps sync messages in a named, encrypted queue whose failures move to a dead-letter queue', () => {
    const queues = template.findResources('AWS::SQS::Queue') as Record<string, { Properties: Json }>;
    expect(Object.keys(queues)).toHaveLength(2);
    for (const q of Object.values(queues)) expect(q.Properties.SqsManagedSseEnabled).toBe(true);
    expect(queues[logicalId(gantry.mcp.syncQueue)]?.Properties).toMatchObject({
      QueueName: 'Staging-mcp-sync',
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(gantry.mcp.syncDeadLetters), 'Arn'] }, maxReceiveCount: MCP_SYNC_MAX_RECEIVES },
      VisibilityTimeout: 6 * MCP_SYNC_TIMEOUT.toSeconds(),
    });
    expect(queues[logicalId(gantry.mcp.syncDeadLetters)]?.Properties.MessageRetentionPeriod).toBe(14 * 86_400);
  });

  it('runs the worker from the queue with partial batch failures, on Node.js 24 with the table and key', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(gantry.mcp.syncWorker) },
      EventSourceArn: { 'Fn::GetAtt': [logicalId(gantry.mcp.syncQueue), 'Arn'] },
      BatchSize: MCP_SYNC_BATCH_SIZE,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    const fn = (template.findResources('AWS::Lambda::Function') as Record<string, { Properties: Json }>)[logicalId(gantry.mcp.syncWorker)];
    expect(fn?.Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Timeout: MCP_SYNC_TIMEOUT.toSeconds(),
      Environment: {
        Variables: {
          POWERTOOLS_SERVICE_NAME: 'gantry-mcp-sync',
          TABLE_NAME: { 'Fn::ImportValue': expect.stringContaining('Staging-Data:') },
          CIPHER_KMS_KEY_ID: { 'Fn::ImportValue': expect.stringContaining('CredentialsKey') },
        },
      },
    });
    // Outside any VPC: discovery reaches the MCP servers over the internet.
    expect(fn?.Properties.VpcConfig).toBeUndefined();
  });

  it('grants the worker item access, decrypt only on the credentials key, and consumption of its own queue', () => {
    const statements = statementsOf(template, logicalId(gantry.mcp.syncWorker.role as never));
    const kms = statements.filter((s) => [s.Action].flat().some((a) => a.startsWith('kms:')));
    expect(actions(kms)).toEqual(['kms:Decrypt']);
    expect(JSON.stringify(kms[0]?.Resource)).toContain('CredentialsKey');
    expect(actions(statements.filter((s) => [s.Action].flat().some((a) => a.startsWith('dynamodb:'))))).toEqual([...ITEM_ACTIONS].sort());
    const sqs = statements.filter((s) => [s.Action].flat().some((a) => a.startsWith('sqs:')));
    expect(actions(sqs)).not.toContain('sqs:SendMessage');
    for (const s of sqs) expect(s.Resource).toEqual({ 'Fn::GetAtt': [logicalId(gantry.mcp.syncQueue), 'Arn'] });
    expect(actions(statements).filter((a) => !/^(kms|dynamodb|sqs|logs|xray):/.test(a))).toEqual([]);
  });

  it('lets the admin function send to the queue only, by its URL; the gateway gets neither', () => {
    const api = Template.fromStack(gantry.api);
    const fns = api.findResources('AWS::Lambda::Function') as Record<string, { Properties: { Environment: { Variables: Json } } }>;
    const url = JSON.stringify(fns[logicalId(gantry.api.admin)]?.Properties.Environment.Variables.QUEUE_URL_MCP_SYNC);
    expect(url).toContain('/Staging-mcp-sync');
    expect(url).toContain('https://sqs.');
    expect(fns[logicalId(gantry.api.gateway)]?.Properties.Environment.Variables.QUEUE_URL_MCP_SYNC).toBeUndefined();
    // The send permission is this stack's policy on the admin role (read from the API stack's outputs).
    const workerRole = logicalId(gantry.mcp.syncWorker.role as never);
    const others = Object.values(template.findResources('AWS::IAM::Policy') as Record<string, { Properties: Json }>).filter(
      (p) => !JSON.stringify(p.Properties.Roles).includes(`"${workerRole}"`),
    );
    expect(others).toHaveLength(1);
    const roles = JSON.stringify(others[0]?.Properties.Roles);
    expect(roles).toContain('Fn::GetStackOutput');
    expect(roles).toContain(logicalId(gantry.api.admin.role as never));
    expect(roles).not.toContain(logicalId(gantry.api.gateway.role as never));
    expect((others[0]?.Properties.PolicyDocument as { Statement: Statement[] }).Statement).toEqual([
      { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': [logicalId(gantry.mcp.syncQueue), 'Arn'] } },
    ]);
  });

  it('alarms on dead letters, worker errors and throttles to the alarm topic, and stays cdk-nag clean', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm') as Record<string, { Properties: Json }>).map((a) => a.Properties);
    const dead = alarms.find((a) => a.MetricName === 'ApproximateNumberOfMessagesVisible');
    expect(dead).toMatchObject({
      Threshold: 0,
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(gantry.mcp.syncDeadLetters), 'QueueName'] } }],
    });
    expect(alarms.map((a) => a.MetricName).sort()).toEqual(['ApproximateNumberOfMessagesVisible', 'Errors', 'Throttles']);
    for (const a of alarms) expect(JSON.stringify(a.AlarmActions)).toContain('Alarms');
    expect(Annotations.fromStack(gantry.mcp).findError('*', Match.anyValue())).toEqual([]);
    expect(Annotations.fromStack(gantry.mcp).findWarning('*', Match.anyValue())).toEqual([]);
  });
});
