import { Stack, type CfnResource } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type GantryApp } from '../../infra/app-builder.ts';
import { RELAY_MAX_TASKS, RELAY_MIN_TASKS, RELAY_PORT } from '../../infra/constructs/fargate-relay.ts';
import { readSettings } from '../../infra/settings.ts';
import { REALTIME_MAX_WAIT_MS } from '../../infra/stacks/realtime-stack.ts';

// Bundling runs esbuild per function; these assertions do not need the code.
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

type Json = Record<string, unknown>;

function logicalId(construct: { node: { defaultChild?: unknown } }): string {
  const child = construct.node.defaultChild as CfnResource;
  return Stack.of(child).getLogicalId(child);
}

describe('RealtimeStack', () => {
  let gantry: GantryApp;
  let template: Template;
  let fnId: string;

  beforeAll(() => {
    // Synthesizing runs the cdk-nag plugins too: an unacknowledged finding fails here.
    gantry = buildApp({ appProps: { context: NO_BUNDLING } });
    template = Template.fromStack(gantry.realtime);
    fnId = logicalId(gantry.realtime.fn!);
  });

  it('creates a WebSocket API routing $connect, $disconnect and $default to the realtime function', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'WEBSOCKET', RouteSelectionExpression: '$request.body.action' });
    const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route')) as { Properties: Json }[];
    expect(routes.map((r) => r.Properties.RouteKey).sort()).toEqual(['$connect', '$default', '$disconnect']);
    const integrations = Object.values(template.findResources('AWS::ApiGatewayV2::Integration')) as { Properties: Json }[];
    expect(integrations).toHaveLength(3);
    for (const i of integrations) {
      expect(i.Properties.IntegrationType).toBe('AWS_PROXY');
      expect(JSON.stringify(i.Properties.IntegrationUri)).toContain(fnId);
    }
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: 'prod',
      AutoDeploy: true,
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('connectionId') },
    });
    template.resourceCountIs('AWS::Lambda::Permission', 3);
  });

  it('runs the function like the others, waiting for the provider less than the 29 s integration timeout', () => {
    const fn = template.findResources('AWS::Lambda::Function')[fnId] as { Properties: Json & { Environment: { Variables: Json } } };
    expect(fn.Properties).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'], TracingConfig: { Mode: 'Active' }, Timeout: 35 });
    expect(fn.Properties.Environment.Variables).toMatchObject({
      GW_REALTIME_MAX_WAIT_MS: String(REALTIME_MAX_WAIT_MS),
      TABLE_NAME: expect.anything(),
      CIPHER_KMS_KEY_ID: expect.anything(),
      QUEUE_URL_LOGS: expect.anything(),
    });
    expect(REALTIME_MAX_WAIT_MS).toBeLessThan(29_000);
  });

  it('grants execute-api:ManageConnections on this API stage’s connections only, item access on the table and the credentials key', () => {
    const policies = Object.values(template.findResources('AWS::IAM::Policy')) as { Properties: { PolicyDocument: { Statement: Json[] } } }[];
    const statements = policies.flatMap((p) => p.Properties.PolicyDocument.Statement);
    const manage = statements.filter((s) => JSON.stringify(s.Action).includes('execute-api'));
    expect(manage).toHaveLength(1);
    expect(manage[0]!.Action).toBe('execute-api:ManageConnections');
    const resource = JSON.stringify(manage[0]!.Resource);
    expect(resource).toContain(logicalId(gantry.realtime.api));
    expect(resource).toContain('/prod/*/@connections/*');
    expect(statements.some((s) => JSON.stringify(s.Action) === JSON.stringify(['kms:Decrypt', 'kms:GenerateDataKey']))).toBe(true);
    const dynamo = statements.filter((s) => JSON.stringify(s.Action).includes('dynamodb:'));
    expect(dynamo.length).toBeGreaterThan(0);
    for (const s of dynamo) {
      expect(JSON.stringify(s.Action)).not.toContain('dynamodb:*');
      expect(JSON.stringify(s.Action)).not.toContain('DeleteTable');
    }
    // Nothing else is granted everywhere but X-Ray.
    for (const s of statements.filter((x) => x.Resource === '*')) expect(JSON.stringify(s.Action)).toContain('xray:');
  });
});

describe('RealtimeStack alarms', () => {
  it('alarms on the realtime function’s errors and throttles through the alarm topic', () => {
    const gantry = buildApp({ appProps: { context: NO_BUNDLING }, nag: false });
    const template = Template.fromStack(gantry.realtime);
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as { Properties: Json }[];
    expect(alarms.map((a) => a.Properties.MetricName).sort()).toEqual(['Errors', 'Throttles']);
    for (const a of alarms) expect(a.Properties.AlarmActions).toHaveLength(1);
  });
});

describe('gantry:realtimeRelay', () => {
  it('defaults to the Lambda relay and refuses another value, naming the setting', () => {
    expect(readSettings(() => undefined).realtimeRelay).toBe('lambda');
    expect(readSettings((k) => (k === 'gantry:realtimeRelay' ? 'fargate' : undefined)).realtimeRelay).toBe('fargate');
    expect(() => readSettings((k) => (k === 'gantry:realtimeRelay' ? 'ec2' : undefined))).toThrow(/gantry:realtimeRelay/);
  });
});

describe('RealtimeStack with the Fargate relay (gantry:realtimeRelay=fargate)', () => {
  let gantry: GantryApp;
  let template: Template;
  let statements: Json[];

  beforeAll(() => {
    // Synthesizing runs the cdk-nag plugins too: an unacknowledged finding fails here.
    gantry = buildApp({ appProps: { context: { ...NO_BUNDLING, 'gantry:realtimeRelay': 'fargate' } } });
    template = Template.fromStack(gantry.realtime);
    const policies = Object.values(template.findResources('AWS::IAM::Policy')) as { Properties: { PolicyDocument: { Statement: Json[] }; Roles: unknown[] } }[];
    const taskRole = logicalId(gantry.realtime.relay!.taskDefinition.taskRole as unknown as { node: { defaultChild?: unknown } });
    statements = policies.filter((p) => JSON.stringify(p.Properties.Roles).includes(taskRole)).flatMap((p) => p.Properties.PolicyDocument.Statement);
  });

  it('has no realtime function: the routes reach the relay service through a VPC link and an internal load balancer', () => {
    expect(gantry.realtime.fn).toBeUndefined();
    template.resourceCountIs('AWS::Lambda::Function', 0);
    const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route')) as { Properties: Json }[];
    expect(routes.map((r) => r.Properties.RouteKey).sort()).toEqual(['$connect', '$default', '$disconnect']);
    const integrations = Object.values(template.findResources('AWS::ApiGatewayV2::Integration')) as { Properties: Json }[];
    expect(integrations).toHaveLength(3);
    for (const i of integrations) {
      expect(i.Properties).toMatchObject({ IntegrationType: 'HTTP_PROXY', ConnectionType: 'VPC_LINK', IntegrationMethod: 'POST' });
      // The connection id pins the session: every route carries it.
      expect(i.Properties.RequestParameters).toMatchObject({ 'integration.request.header.connectionid': 'context.connectionId' });
      expect(JSON.stringify(i.Properties.IntegrationUri)).toContain(`:${RELAY_PORT}/realtime/`);
    }
    template.resourceCountIs('AWS::ApiGateway::VpcLink', 1);
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', { Type: 'network', Scheme: 'internal' });
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', { TargetType: 'ip', Port: RELAY_PORT, HealthCheckPath: '/health' });
  });

  it('runs the project image on arm64 with the relay entry point and the @connections endpoint of this stage', () => {
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      RequiresCompatibilities: ['FARGATE'],
      RuntimePlatform: { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' },
      ContainerDefinitions: [Match.objectLike({ Command: ['node', '--enable-source-maps', 'dist/relay/main.mjs'], StopTimeout: Match.anyValue() })],
    });
    const [task] = Object.values(template.findResources('AWS::ECS::TaskDefinition')) as {
      Properties: { ContainerDefinitions: { Environment: { Name: string; Value: unknown }[] }[] };
    }[];
    const env = Object.fromEntries(task!.Properties.ContainerDefinitions[0]!.Environment.map((e) => [e.Name, e.Value]));
    expect(Object.keys(env)).toEqual(expect.arrayContaining(['TABLE_NAME', 'CIPHER_KMS_KEY_ID', 'QUEUE_URL_LOGS', 'QUEUE_URL_ALERTS', 'LOG_LEVEL']));
    const endpoint = JSON.stringify(env.GW_CONNECTIONS_ENDPOINT);
    expect(endpoint).toContain(logicalId(gantry.realtime.api));
    expect(endpoint).toContain('/prod');
    template.hasResourceProperties('AWS::ECS::Service', {
      LaunchType: 'FARGATE',
      DesiredCount: RELAY_MIN_TASKS,
      NetworkConfiguration: { AwsvpcConfiguration: Match.objectLike({ AssignPublicIp: 'ENABLED' }) },
    });
    // No NAT gateway: the idle cost is a task, the load balancer and public addresses.
    template.resourceCountIs('AWS::EC2::NatGateway', 0);
    // The relay port is open to the VPC only.
    const groups = Object.values(template.findResources('AWS::EC2::SecurityGroup')) as { Properties: { SecurityGroupIngress?: Json[] } }[];
    const ingress = groups.flatMap((g) => g.Properties.SecurityGroupIngress ?? []);
    expect(ingress).toEqual([expect.objectContaining({ FromPort: RELAY_PORT, ToPort: RELAY_PORT, CidrIp: '10.60.0.0/16' })]);
  });

  it('scales on CPU and memory between one task and its maximum', () => {
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: RELAY_MIN_TASKS,
      MaxCapacity: RELAY_MAX_TASKS,
      ScalableDimension: 'ecs:service:DesiredCount',
    });
    const policies = Object.values(template.findResources('AWS::ApplicationAutoScaling::ScalingPolicy')) as {
      Properties: Json & { TargetTrackingScalingPolicyConfiguration: Json };
    }[];
    const metrics = policies
      .map((p) => (p.Properties.TargetTrackingScalingPolicyConfiguration.PredefinedMetricSpecification as Json).PredefinedMetricType)
      .sort();
    expect(metrics).toEqual(['ECSServiceAverageCPUUtilization', 'ECSServiceAverageMemoryUtilization']);
  });

  it('grants the tasks execute-api:ManageConnections on this stage’s connections only, items of the table, the key and the queues', () => {
    const manage = statements.filter((s) => JSON.stringify(s.Action).includes('execute-api'));
    expect(manage).toHaveLength(1);
    expect(manage[0]!.Action).toBe('execute-api:ManageConnections');
    const resource = JSON.stringify(manage[0]!.Resource);
    expect(resource).toContain(logicalId(gantry.realtime.api));
    expect(resource).toContain('/prod/*/@connections/*');
    expect(statements.some((s) => JSON.stringify(s.Action) === JSON.stringify(['kms:Decrypt', 'kms:GenerateDataKey']))).toBe(true);
    const dynamo = statements.filter((s) => JSON.stringify(s.Action).includes('dynamodb:'));
    expect(dynamo.length).toBeGreaterThan(0);
    for (const s of dynamo) expect(JSON.stringify(s.Action)).not.toMatch(/dynamodb:\*|DeleteTable/);
    expect(statements.filter((s) => JSON.stringify(s.Action).includes('sqs:SendMessage'))).toHaveLength(2);
    expect(statements.filter((s) => s.Resource === '*')).toEqual([]);
  });

  it('alarms when no task is healthy and on high CPU or memory, through the alarm topic', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as { Properties: Json }[];
    expect(alarms.map((a) => a.Properties.MetricName).sort()).toEqual(['CPUUtilization', 'HealthyHostCount', 'MemoryUtilization']);
    for (const a of alarms) expect(a.Properties.AlarmActions).toHaveLength(1);
    expect(alarms.find((a) => a.Properties.MetricName === 'HealthyHostCount')!.Properties).toMatchObject({
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 1,
      TreatMissingData: 'breaching',
    });
  });
});
