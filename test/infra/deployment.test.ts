/**
 * Issue 14 on the synthesized templates: settings from context reach the functions, the bootstrap
 * resource keeps the owner key in a secret whose name (only) is an output, every function, queue
 * and schedule is alarmed, stacks and dashboard take a prefix, and no stack exports anything but
 * the retained data resources. Synthesizing with a prefix runs cdk-nag too.
 */
import { Stack, type CfnResource } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type GantryApp } from '../../infra/app-builder.ts';
import { BOOTSTRAP_RESOURCE_TYPE } from '../../infra/constructs/bootstrap.ts';
import { DEFAULT_MEMORY_MB, readSettings, runtimeEnvironment, SettingsError } from '../../infra/settings.ts';

const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };
type Json = Record<string, unknown>;
type Resources = Record<string, { Type: string; Properties: Json; DeletionPolicy?: string }>;

const logicalId = (construct: { node: { defaultChild?: unknown } }): string => {
  const child = construct.node.defaultChild as CfnResource;
  return Stack.of(child).getLogicalId(child);
};
const stacks = (g: GantryApp) => [g.data, g.api, g.limits, g.identity, g.observability, g.monitoring];

describe('deployment settings', () => {
  const read = (ctx: Json) => readSettings((k) => ctx[k]);

  it('default to the Gantry prefix, WARN logs and the measured memory', () => {
    expect(read({})).toMatchObject({ prefix: 'Gantry', logLevel: 'WARN', memoryMb: DEFAULT_MEMORY_MB, jwt: undefined, disabledFeatures: [] });
  });

  it('take strings from the command line and values from cdk.json', () => {
    const s = read({
      'gantry:memory:gateway': '512',
      'gantry:disabledFeatures': 'scim, guardrails',
      'gantry:gatewayReservedConcurrency': 50,
      'gantry:logLevel': 'INFO',
    });
    expect(s.memoryMb.gateway).toBe(512);
    expect(s.disabledFeatures).toEqual(['scim', 'guardrails']);
    expect(s.gatewayReservedConcurrency).toBe(50);
    expect(s.logLevel).toBe('INFO');
  });

  it('refuse bad values, naming every context key', () => {
    const bad = () =>
      read({
        'gantry:prefix': '1bad prefix',
        'gantry:memory:gateway': '64',
        'gantry:alarmEmail': 'not-an-address',
        'gantry:disabledFeatures': 'scim,teleport',
        'gantry:jwksUrl': 'https://idp.example.com/jwks.json',
      });
    expect(bad).toThrow(SettingsError);
    for (const key of ['gantry:prefix', 'gantry:memory:gateway', 'gantry:alarmEmail', 'gantry:disabledFeatures', 'gantry:jwtIssuer']) expect(bad).toThrow(key);
  });
});

describe('the synthesized app (issue 14)', () => {
  let gantry: GantryApp;

  beforeAll(() => {
    gantry = buildApp({
      appProps: {
        context: {
          ...NO_BUNDLING,
          'gantry:alarmEmail': 'ops@example.com',
          'gantry:memory:gateway': '384',
          'gantry:gatewayReservedConcurrency': '40',
          'gantry:disabledFeatures': 'scim',
          'gantry:logLevel': 'INFO',
          'gantry:jwksUrl': 'https://idp.example.com/.well-known/jwks.json',
          'gantry:jwtIssuer': 'https://idp.example.com/',
          'gantry:jwtAudience': 'gantry',
          'gantry:assumableRoleArns': 'arn:aws:iam::123456789012:role/bedrock-a,arn:aws:iam::210987654321:role/bedrock-*',
        },
      },
      nag: false,
    });
  });

  it('gives every function the runtime settings, and the gateway its memory and reserved concurrency', () => {
    for (const stack of stacks(gantry)) {
      for (const fn of Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function') as Resources)) {
        expect(fn.Properties.Environment).toMatchObject({
          Variables: {
            LOG_LEVEL: 'INFO',
            SCIM_ENABLED: 'OFF',
            GW_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json',
            GW_JWT_ISSUER: 'https://idp.example.com/',
            GW_JWT_AUDIENCE: 'gantry',
          },
        });
      }
    }
    const gateway = (Template.fromStack(gantry.api).findResources('AWS::Lambda::Function') as Resources)[logicalId(gantry.api.gateway)];
    expect(gateway?.Properties).toMatchObject({ MemorySize: 384, ReservedConcurrentExecutions: 40 });
  });

  it('lets the gateway, and no other function, assume the listed Bedrock roles only', () => {
    const assume = stacks(gantry).flatMap((s) =>
      Object.values(Template.fromStack(s).findResources('AWS::IAM::Policy') as Resources).flatMap((p) =>
        (p.Properties.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] }).Statement.filter((x) =>
          [x.Action].flat().includes('sts:AssumeRole'),
        ).map((x) => ({ x, roles: p.Properties.Roles })),
      ),
    );
    expect(assume).toHaveLength(1);
    expect(assume[0]?.x.Resource).toEqual(['arn:aws:iam::123456789012:role/bedrock-a', 'arn:aws:iam::210987654321:role/bedrock-*']);
    expect(assume[0]?.roles).toEqual([{ Ref: logicalId(gantry.api.gateway.role as never) }]);
    expect(() => readSettings((k) => (k === 'gantry:assumableRoleArns' ? 'arn:aws:s3:::bucket' : undefined))).toThrow('gantry:assumableRoleArns');
  });

  it('bootstraps through a custom resource that writes the owner key to a retained secret; only the name is an output', () => {
    const template = Template.fromStack(gantry.identity);
    const b = gantry.identity.bootstrap;
    const secretId = logicalId(b.secret);
    template.hasResource('AWS::SecretsManager::Secret', { DeletionPolicy: 'Retain' });
    template.hasResourceProperties(BOOTSTRAP_RESOURCE_TYPE, {
      ServiceToken: { 'Fn::GetAtt': [logicalId(b.fn), 'Arn'] },
      AdminKeySecretId: { Ref: secretId },
    });
    // A secret's Ref is its ARN; the output is its name, never a value.
    const output = template.toJSON().Outputs.AdminKeySecretName as { Value: unknown };
    expect(JSON.stringify(output.Value)).toContain(secretId);
    expect(JSON.stringify(output.Value)).not.toContain('SecretString');
    const statements = Object.values(template.findResources('AWS::IAM::Policy') as Resources)
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] }).Statement)
      .filter((s) => [s.Action].flat().some((a) => a.startsWith('secretsmanager:')));
    expect(statements).toEqual([expect.objectContaining({ Action: 'secretsmanager:PutSecretValue', Resource: { Ref: secretId } })]);
  });

  it('alarms on every function’s errors and throttles, API 5XX, every dead-letter queue, table throttling and stopped schedules', () => {
    const template = Template.fromStack(gantry.monitoring);
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm') as Resources).map((a) => a.Properties);
    const functions = stacks(gantry).flatMap((s) => Object.keys(Template.fromStack(s).findResources('AWS::Lambda::Function')));
    const errorAlarms = alarms.filter((a) => a.MetricName === 'Errors' && a.Namespace === 'AWS/Lambda');
    expect(errorAlarms).toHaveLength(functions.length);
    const throttles = JSON.stringify(alarms.find((a) => String(a.AlarmDescription).includes('throttled (concurrency'))?.Metrics);
    expect(throttles.match(/"Throttles"/g)).toHaveLength(functions.length);
    expect(alarms.find((a) => a.MetricName === '5XXError' && a.Namespace === 'AWS/ApiGateway')).toBeDefined();
    const deadLetterAlarms = alarms.filter((a) => a.MetricName === 'ApproximateNumberOfMessagesVisible');
    const deadLetterQueues = [
      gantry.observability.logsDeadLetters,
      gantry.observability.exportsDeadLetters,
      gantry.limits.alertsDeadLetters,
      gantry.limits.resetDeadLetters,
      gantry.identity.lifecycleDeadLetters,
    ];
    expect(deadLetterAlarms).toHaveLength(deadLetterQueues.length);
    const schedules = alarms.filter((a) => a.MetricName === 'Invocations');
    expect(schedules).toHaveLength(2);
    for (const a of schedules) expect(a).toMatchObject({ TreatMissingData: 'breaching', ComparisonOperator: 'LessThanThreshold', Threshold: 1 });
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
  });

  it('exports nothing but the retained data resources, so queues and functions can be replaced', () => {
    for (const stack of stacks(gantry).filter((s) => s !== gantry.data)) {
      const outputs = (Template.fromStack(stack).toJSON().Outputs ?? {}) as Record<string, { Export?: unknown }>;
      expect(
        Object.entries(outputs)
          .filter(([, o]) => o.Export)
          .map(([k]) => `${stack.stackName}.${k}`),
      ).toEqual([]);
    }
    const data = Template.fromStack(gantry.data).toJSON() as { Outputs: Record<string, { Value: unknown }>; Resources: Resources };
    const exported = new Set(Object.values(data.Outputs).map((o) => JSON.stringify(o.Value).match(/"(?:Ref|Fn::GetAtt)":\[?"([A-Za-z0-9]+)"/)?.[1]));
    for (const id of exported) expect(['AWS::DynamoDB::Table', 'AWS::S3::Bucket', 'AWS::KMS::Key']).toContain(data.Resources[id!]?.Type);
    for (const id of exported) expect(data.Resources[id!]?.DeletionPolicy).toBe('Retain');
  });
});

describe('a container joining the deployment (GW_STORAGE=aws)', () => {
  it('finds every setting it needs as an output of the stack that owns the resource, never an export', () => {
    const gantry = buildApp({ appProps: { context: NO_BUNDLING }, nag: false });
    const outputs = [gantry.data, gantry.observability, gantry.limits, gantry.mcp, gantry.batches].flatMap((stack) =>
      Object.entries((Template.fromStack(stack).toJSON().Outputs ?? {}) as Record<string, { Description?: string; Export?: unknown; Value: unknown }>)
        .filter(([id]) => id.startsWith('Container'))
        .map(([id, o]) => ({
          stack: stack.node.id,
          id,
          variable: o.Description?.split(' ')[0],
          exported: o.Export !== undefined,
          value: JSON.stringify(o.Value),
        })),
    );
    expect(outputs.map((o) => o.variable).sort()).toEqual(
      [
        'BATCH_STATE_MACHINE_ARN',
        'BLOB_BUCKET',
        'CIPHER_KMS_KEY_ID',
        'GW_TABLE_NAME',
        'QUEUE_URL_ALERTS',
        'QUEUE_URL_LOGS',
        'QUEUE_URL_LOG_EXPORTS',
        'QUEUE_URL_MCP_SYNC',
      ].sort(),
    );
    expect(outputs.filter((o) => o.exported)).toEqual([]);
    expect(outputs.find((o) => o.variable === 'GW_TABLE_NAME')).toMatchObject({ stack: 'Gantry-Data', id: 'ContainerGwTableName' });
    // Each value is a reference inside its own stack (a Ref or GetAtt), not an import from another.
    for (const o of outputs) expect(o.value, o.id).not.toContain('Fn::ImportValue');
  });
});

describe('two deployments in one account', () => {
  it('prefix every stack and the dashboard, and stay cdk-nag clean', () => {
    const staging = buildApp({ appProps: { context: { ...NO_BUNDLING, 'gantry:prefix': 'Staging' } } });
    expect(stacks(staging).map((s) => s.stackName)).toEqual([
      'Staging-Data',
      'Staging-Api',
      'Staging-Limits',
      'Staging-Identity',
      'Staging-Observability',
      'Staging-Monitoring',
    ]);
    // Synthesizing runs the cdk-nag plugins: an acknowledgement that missed its prefixed resource fails here.
    Template.fromStack(staging.monitoring).hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'Staging' });
    expect(Annotations.fromStack(staging.api).findError('*', Match.anyValue())).toEqual([]);
  });
});

describe('runtime variables from the settings', () => {
  it('passes the MCP gateway allowed origins and trusted hosts to the functions', () => {
    const s = readSettings((k) => ({ 'gantry:mcpAllowedOrigins': 'https://app.example.com', 'gantry:trustedCustomHosts': 'localhost:11434' })[k]);
    expect(runtimeEnvironment(s)).toMatchObject({ GW_MCP_ALLOWED_ORIGINS: 'https://app.example.com', GW_TRUSTED_CUSTOM_HOSTS: 'localhost:11434' });
    expect(runtimeEnvironment(readSettings(() => undefined))).not.toHaveProperty('GW_MCP_ALLOWED_ORIGINS');
  });
});
