import { App, Stack, type CfnResource } from 'aws-cdk-lib';
import { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type GantryApp } from '../../infra/app-builder.ts';
import { ALERTS_MAX_RECEIVES, LimitsStack } from '../../infra/stacks/limits-stack.ts';

// Bundling runs esbuild per function; these assertions do not need the code.
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

type Json = Record<string, unknown>;

function logicalId(construct: { node: { defaultChild?: unknown } }): string {
  const child = construct.node.defaultChild as CfnResource;
  return Stack.of(child).getLogicalId(child);
}

describe('LimitsStack', () => {
  let gantry: GantryApp;
  let template: Template;

  beforeAll(() => {
    // Synthesizing runs the cdk-nag plugins too: an unacknowledged finding fails here.
    gantry = buildApp({ appProps: { context: NO_BUNDLING } });
    template = Template.fromStack(gantry.limits);
  });

  it('keeps alerts in an encrypted, TLS-only queue with a dead-letter queue', () => {
    template.resourceCountIs('AWS::SQS::Queue', 3);
    const queues = template.findResources('AWS::SQS::Queue');
    for (const q of Object.values(queues)) expect((q as { Properties: Json }).Properties.SqsManagedSseEnabled).toBe(true);
    const alertsId = logicalId(gantry.limits.alerts);
    const dlqId = logicalId(gantry.limits.alertsDeadLetters);
    expect((queues[alertsId] as { Properties: Json }).Properties).toMatchObject({
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] }, maxReceiveCount: ALERTS_MAX_RECEIVES },
      VisibilityTimeout: 360,
    });
    // Every queue refuses requests without TLS.
    const policies = Object.values(template.findResources('AWS::SQS::QueuePolicy')) as { Properties: { PolicyDocument: { Statement: Json[] } } }[];
    expect(policies).toHaveLength(3);
    for (const p of policies) {
      expect(p.Properties.PolicyDocument.Statement).toContainEqual(
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      );
    }
  });

  it('runs the alerts worker on the queue with partial batch failures', () => {
    const workerId = logicalId(gantry.limits.alertsWorker);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: workerId },
      EventSourceArn: { 'Fn::GetAtt': [logicalId(gantry.limits.alerts), 'Arn'] },
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    const fn = template.findResources('AWS::Lambda::Function')[workerId] as { Properties: Json };
    expect(fn.Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      TracingConfig: { Mode: 'Active' },
      Environment: { Variables: { POWERTOOLS_SERVICE_NAME: 'gantry-limits-alerts' } },
    });
    // No sender configured: nothing may be mailed, so no SES permission either.
    expect(JSON.stringify(template.findResources('AWS::IAM::Policy'))).not.toContain('ses:SendEmail');
  });

  it('runs the usage resets every five minutes from EventBridge Scheduler', () => {
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(5 minutes)',
      State: 'ENABLED',
      Target: Match.objectLike({
        Arn: { 'Fn::GetAtt': [logicalId(gantry.limits.resetWorker), 'Arn'] },
        RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 600 },
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [logicalId(gantry.limits.resetDeadLetters), 'Arn'] } },
      }),
    });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalId(gantry.limits.resetWorker) },
      MaximumRetryAttempts: 2,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(gantry.limits.resetDeadLetters), 'Arn'] } } },
    });
  });

  it('lets the gateway queue alerts, and only the gateway', () => {
    const api = Template.fromStack(gantry.api);
    const gatewayId = logicalId(gantry.api.gateway);
    const adminId = logicalId(gantry.api.admin);
    const functions = api.findResources('AWS::Lambda::Function');
    const env = (id: string) => (functions[id] as { Properties: { Environment: { Variables: Json } } }).Properties.Environment.Variables;
    expect(env(gatewayId)).toHaveProperty('QUEUE_URL_ALERTS');
    expect(env(adminId)).not.toHaveProperty('QUEUE_URL_ALERTS');
    type Policy = { Properties: { Roles: unknown[]; PolicyDocument: { Statement: { Action: string | string[]; Resource: unknown }[] } } };
    // Statements that may send to the alerts queue (read from Gantry-Limits' outputs: issue 14 made
    // queue references weak, so no export blocks replacing the queue), and whose roles hold them.
    const holders = (Object.values(api.findResources('AWS::IAM::Policy')) as Policy[]).filter((p) =>
      p.Properties.PolicyDocument.Statement.some(
        (s) => [s.Action].flat().includes('sqs:SendMessage') && JSON.stringify(s.Resource).includes('"StackName":"Gantry-Limits"'),
      ),
    );
    expect(holders).toHaveLength(1);
    expect(holders[0]?.Properties.Roles).toEqual([{ Ref: logicalId(gantry.api.gateway.role as never) }]);
  });

  it('grants SES sending for the configured sender only', () => {
    // The stack alone, on an imported table: the whole app is covered above.
    const app = new App({ context: NO_BUNDLING });
    const limits = new LimitsStack(app, 'Limits', { table: Table.fromTableName(new Stack(app, 'Tables'), 'Table', 'gantry'), mailFrom: 'alerts@example.com' });
    const t = Template.fromStack(limits);
    const fn = t.findResources('AWS::Lambda::Function')[logicalId(limits.alertsWorker)] as { Properties: { Environment: { Variables: Json } } };
    expect(fn.Properties.Environment.Variables.MAIL_FROM).toBe('alerts@example.com');
    const text = JSON.stringify(t.findResources('AWS::IAM::Policy'));
    expect(text).toContain('ses:SendEmail');
    expect(text).toContain(':identity/alerts@example.com');
    expect(text).toContain(':identity/example.com');
  });
});
