/**
 * Gantry-Identity: the key lifecycle worker, its EventBridge Scheduler schedule and dead letters,
 * and what it gives the admin function (invite link base, SES sending when a sender is set).
 * Synthesizing runs the cdk-nag packs: an unacknowledged finding fails here.
 */
import { Stack, type CfnResource } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type GantryApp } from '../../infra/app-builder.ts';

const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

const logicalId = (construct: { node: { defaultChild?: unknown } }): string => {
  const child = construct.node.defaultChild as CfnResource;
  return Stack.of(child).getLogicalId(child);
};

describe('IdentityStack', () => {
  let gantry: GantryApp;
  let template: Template;

  beforeAll(() => {
    gantry = buildApp({ appProps: { context: NO_BUNDLING } });
    template = Template.fromStack(gantry.identity);
  });

  it('runs the key lifecycle worker on Node.js 24, arm64, with the table name', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    expect(functions[logicalId(gantry.identity.lifecycleWorker)]?.Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Timeout: 300,
      Environment: {
        Variables: { POWERTOOLS_SERVICE_NAME: 'gantry-key-lifecycle', TABLE_NAME: { 'Fn::ImportValue': expect.stringContaining('Gantry-Data') } },
      },
    });
  });

  it('EventBridge Scheduler invokes it every five minutes, with retries and a dead-letter queue', () => {
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(5 minutes)',
      State: 'ENABLED',
      Target: {
        Arn: { 'Fn::GetAtt': [logicalId(gantry.identity.lifecycleWorker), 'Arn'] },
        RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 600 },
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [logicalId(gantry.identity.lifecycleDeadLetters), 'Arn'] } },
      },
    });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      MaximumRetryAttempts: 2,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(gantry.identity.lifecycleDeadLetters), 'Arn'] } } },
    });
    template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 86_400 });
  });

  it('the scheduler role may invoke the worker and nothing else', () => {
    const policies = template.findResources('AWS::IAM::Policy');
    const statements = Object.values(policies).flatMap(
      (p) => (p.Properties as { PolicyDocument: { Statement: { Action: string | string[] }[] } }).PolicyDocument.Statement,
    );
    const invoke = statements.filter((s) => [s.Action].flat().includes('lambda:InvokeFunction'));
    expect(invoke.length).toBe(1);
  });

  it('gives the admin function the invite link base (the API URL with its stage)', () => {
    const api = Template.fromStack(gantry.api);
    const admin = api.findResources('AWS::Lambda::Function')[logicalId(gantry.api.admin)];
    const url = JSON.stringify((admin?.Properties as { Environment: { Variables: Record<string, unknown> } }).Environment.Variables.GW_PUBLIC_URL);
    expect(url).toContain('execute-api');
    expect(url).toContain('/prod');
  });

  it('with a sender (context gantry:mailFrom) the worker and the admin function may send from it through SES', () => {
    const withMail = buildApp({ appProps: { context: { ...NO_BUNDLING, 'gantry:mailFrom': 'keys@example.com' } } });
    const identity = Template.fromStack(withMail.identity);
    identity.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Action: 'ses:SendEmail' })]) },
    });
    const api = Template.fromStack(withMail.api);
    api.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Action: 'ses:SendEmail' })]) },
    });
    const admin = api.findResources('AWS::Lambda::Function')[logicalId(withMail.api.admin)];
    expect((admin?.Properties as { Environment: { Variables: Record<string, unknown> } }).Environment.Variables.MAIL_FROM).toBe('keys@example.com');
  });
});
