import { Stack, type CfnResource } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type GantryApp } from '../../infra/app-builder.ts';
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
    fnId = logicalId(gantry.realtime.fn);
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
