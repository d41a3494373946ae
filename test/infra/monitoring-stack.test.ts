/**
 * The observability infrastructure: the logs and log-exports queues with their dead-letter queues
 * and workers, the environment and permissions the API functions get, and the monitoring stack's
 * dashboard, alarms and encrypted topic. Synthesizing runs cdk-nag: any unacknowledged finding fails.
 */
import { Stack, type CfnResource } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type GantryApp } from '../../infra/app-builder.ts';
import { DEFAULT_THRESHOLDS, GATEWAY_SERVICE } from '../../infra/stacks/monitoring-stack.ts';
import { EXPORTS_MAX_RECEIVES, INGEST_BATCH_SIZE, INGEST_MAX_CONCURRENCY, LOG_OBJECT_DAYS, LOGS_MAX_RECEIVES } from '../../infra/stacks/observability-stack.ts';
import { METRIC, METRICS_NAMESPACE } from '../../layers/core/src/observability/metrics-hook.ts';

const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };
type Json = Record<string, unknown>;

function logicalId(construct: { node: { defaultChild?: unknown } }): string {
  const child = construct.node.defaultChild as CfnResource;
  return Stack.of(child).getLogicalId(child);
}

describe('ObservabilityStack', () => {
  let gantry: GantryApp;
  let template: Template;

  beforeAll(() => {
    gantry = buildApp({ appProps: { context: { ...NO_BUNDLING, 'gantry:alarmEmail': 'ops@example.com' } } });
    template = Template.fromStack(gantry.observability);
  });

  it('keeps log events and export jobs in encrypted queues with dead-letter queues', () => {
    const queues = template.findResources('AWS::SQS::Queue');
    expect(Object.keys(queues)).toHaveLength(4);
    for (const q of Object.values(queues)) expect((q as { Properties: Json }).Properties.SqsManagedSseEnabled).toBe(true);
    const o = gantry.observability;
    expect((queues[logicalId(o.logs)] as { Properties: Json }).Properties).toMatchObject({
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(o.logsDeadLetters), 'Arn'] }, maxReceiveCount: LOGS_MAX_RECEIVES },
      VisibilityTimeout: 360,
    });
    expect((queues[logicalId(o.exports)] as { Properties: Json }).Properties).toMatchObject({
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(o.exportsDeadLetters), 'Arn'] }, maxReceiveCount: EXPORTS_MAX_RECEIVES },
    });
    expect((queues[logicalId(o.logsDeadLetters)] as { Properties: Json }).Properties.MessageRetentionPeriod).toBe(14 * 86_400);
  });

  it('runs the ingest worker in batches with partial failures and bounded concurrency', () => {
    const o = gantry.observability;
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(o.ingestWorker) },
      EventSourceArn: { 'Fn::GetAtt': [logicalId(o.logs), 'Arn'] },
      BatchSize: INGEST_BATCH_SIZE,
      MaximumBatchingWindowInSeconds: 2,
      ScalingConfig: { MaximumConcurrency: INGEST_MAX_CONCURRENCY },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(o.exportWorker) },
      BatchSize: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    const fns = template.findResources('AWS::Lambda::Function');
    expect((fns[logicalId(o.ingestWorker)] as { Properties: Json }).Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Timeout: 60,
      Environment: { Variables: { POWERTOOLS_SERVICE_NAME: 'gantry-log-ingest', QUEUE_URL_LOGS: { Ref: logicalId(o.logs) } } },
    });
    expect((fns[logicalId(o.exportWorker)] as { Properties: Json }).Properties).toMatchObject({
      Timeout: 900,
      Environment: { Variables: { QUEUE_URL_LOG_EXPORTS: { Ref: logicalId(o.exports) } } },
    });
    // The export queue's messages stay hidden while a run may last.
    const exportsQueue = template.findResources('AWS::SQS::Queue')[logicalId(o.exports)] as { Properties: { VisibilityTimeout: number } };
    expect(exportsQueue.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(900);
  });

  it('lets the gateway and admin functions send log events, and the admin function start exports', () => {
    const api = Template.fromStack(gantry.api);
    const fns = api.findResources('AWS::Lambda::Function');
    const env = (id: string) => (fns[id] as { Properties: { Environment: { Variables: Json } } }).Properties.Environment.Variables;
    expect(env(logicalId(gantry.api.gateway))).toMatchObject({
      QUEUE_URL_LOGS: expect.anything(),
      GW_EMF_METRICS: 'ON',
      POWERTOOLS_SERVICE_NAME: GATEWAY_SERVICE,
    });
    expect(env(logicalId(gantry.api.admin))).toMatchObject({ QUEUE_URL_LOGS: expect.anything(), QUEUE_URL_LOG_EXPORTS: expect.anything() });
    expect(env(logicalId(gantry.api.admin)).GW_EMF_METRICS).toBeUndefined();
    const statements = Object.values(api.findResources('AWS::IAM::Policy')).flatMap(
      (p) => (p as { Properties: { PolicyDocument: { Statement: Json[] } } }).Properties.PolicyDocument.Statement,
    );
    const sends = statements.filter((s) => JSON.stringify(s.Action).includes('sqs:SendMessage'));
    expect(sends.length).toBeGreaterThanOrEqual(3);
  });

  it('expires log bodies and export files in the bucket', () => {
    Template.fromStack(gantry.data).hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({ Id: 'expire-log-bodies', Prefix: 'logs/', ExpirationInDays: LOG_OBJECT_DAYS, Status: 'Enabled' }),
          Match.objectLike({ Id: 'expire-log-exports', Prefix: 'exports/', ExpirationInDays: LOG_OBJECT_DAYS, Status: 'Enabled' }),
        ]),
      },
    });
  });
});

describe('MonitoringStack', () => {
  let gantry: GantryApp;
  let template: Template;
  let alarms: { Properties: Json }[];

  beforeAll(() => {
    gantry = buildApp({ appProps: { context: { ...NO_BUNDLING, 'gantry:alarmEmail': 'ops@example.com' } } });
    template = Template.fromStack(gantry.monitoring);
    alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as { Properties: Json }[];
  });

  it('notifies an encrypted, TLS-only SNS topic (and the configured address) of every alarm', () => {
    template.resourceCountIs('AWS::SNS::Topic', 1);
    const topicId = logicalId(gantry.monitoring.topic);
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com', TopicArn: { Ref: topicId } });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
    // CloudWatch may use the key to publish.
    template.hasResourceProperties('AWS::KMS::Key', {
      KeyPolicy: {
        Statement: Match.arrayWith([Match.objectLike({ Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: ['kms:Decrypt', 'kms:GenerateDataKey*'] })]),
      },
    });
    for (const a of alarms) {
      expect(a.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(a.Properties.OKActions).toEqual([{ Ref: topicId }]);
    }
  });

  it('alarms on the 5xx rate, p99 latency, throttling, dead letters and ingest lag', () => {
    const byDescription = (text: string) => alarms.find((a) => String(a.Properties.AlarmDescription).includes(text))?.Properties;
    const errorRate = byDescription('answered 5xx');
    expect(errorRate).toMatchObject({
      Threshold: DEFAULT_THRESHOLDS.errorRatePercent,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    const metrics = JSON.stringify(errorRate?.Metrics);
    expect(metrics).toContain(METRICS_NAMESPACE);
    expect(metrics).toContain('"statusClass"');
    expect(metrics).toContain(`"${GATEWAY_SERVICE}"`);
    expect(byDescription('p99 latency')).toMatchObject({
      Threshold: DEFAULT_THRESHOLDS.p99LatencyMs,
      ExtendedStatistic: 'p99',
      MetricName: METRIC.latency,
      Namespace: METRICS_NAMESPACE,
    });
    expect(JSON.stringify(byDescription('function was throttled')?.Metrics)).toContain('Throttles');
    expect(JSON.stringify(byDescription('DynamoDB throttled')?.Metrics)).toContain('WriteThrottleEvents');
    for (const queue of ['logs', 'log-exports', 'alerts']) {
      expect(byDescription(`of the ${queue} queue failed`)).toMatchObject({
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Threshold: 0,
        Statistic: 'Maximum',
      });
    }
    expect(byDescription('wait more than')).toMatchObject({ MetricName: 'ApproximateAgeOfOldestMessage', Threshold: DEFAULT_THRESHOLDS.ingestLagSeconds });
  });

  it('draws the gateway metrics beside Lambda, API Gateway, DynamoDB and SQS health', () => {
    const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard')) as { Properties: { DashboardBody: unknown } }[];
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify(dashboards[0]!.Properties.DashboardBody);
    for (const name of Object.values(METRIC)) expect(body).toContain(`\\"${name}\\"`);
    for (const metric of [
      'Invocations',
      'Throttles',
      'ConcurrentExecutions',
      'Count',
      '5XXError',
      'IntegrationLatency',
      'ConsumedWriteCapacityUnits',
      'WriteThrottleEvents',
      'ApproximateAgeOfOldestMessage',
    ]) {
      expect(body).toContain(`\\"${metric}\\"`);
    }
    for (const ns of ['AWS/Lambda', 'AWS/ApiGateway', 'AWS/DynamoDB', 'AWS/SQS', METRICS_NAMESPACE]) expect(body).toContain(ns);
  });
});
