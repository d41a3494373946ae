import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { beforeAll, describe, expect, it } from 'vitest';
import { CACHE_OBJECT_DAYS, DataStack, grantItemAccess, ITEM_ACTIONS } from '../../infra/stacks/data-stack.ts';
import { TABLE, keyAttributes, type TableDeclaration } from '../../layers/core/src/store/table.ts';

const TYPE_NAMES = { S: 'S', N: 'N', B: 'B' } as const;

function keySchema(pk: string, sk: string): unknown[] {
  return [
    { AttributeName: pk, KeyType: 'HASH' },
    { AttributeName: sk, KeyType: 'RANGE' },
  ];
}

describe('DataStack', () => {
  let template: Template;

  beforeAll(() => {
    template = Template.fromStack(new DataStack(new App(), 'Data'));
  });

  it('builds exactly one table', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
  });

  it('keeps blobs in a private, encrypted, TLS-only bucket whose cache bodies expire', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      LifecycleConfiguration: { Rules: [Match.objectLike({ Prefix: 'cache/', ExpirationInDays: CACHE_OBJECT_DAYS, Status: 'Enabled' })] },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
    template.hasResource('AWS::S3::Bucket', { DeletionPolicy: 'Retain' });
  });

  it('keeps a rotating, retained KMS key for the stored provider credentials', () => {
    template.resourceCountIs('AWS::KMS::Key', 1);
    template.hasResource('AWS::KMS::Key', {
      Properties: Match.objectLike({ EnableKeyRotation: true }),
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
  });

  it('takes keys, indexes and TTL from the TABLE declaration', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: keySchema(TABLE.partitionKey.name, TABLE.sortKey.name),
      AttributeDefinitions: Match.arrayWith(keyAttributes().map((a) => ({ AttributeName: a.name, AttributeType: TYPE_NAMES[a.type] }))),
      GlobalSecondaryIndexes: TABLE.globalIndexes.map((i) => ({
        IndexName: i.name,
        KeySchema: keySchema(i.partitionKey.name, i.sortKey.name),
        Projection: { ProjectionType: 'ALL' },
      })),
      TimeToLiveSpecification: { AttributeName: TABLE.ttlAttribute, Enabled: true },
    });
    const [table] = Object.values(template.findResources('AWS::DynamoDB::Table'));
    expect(table?.Properties.AttributeDefinitions).toHaveLength(keyAttributes().length);
  });

  it('is on demand, encrypted, recoverable and retained', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      Properties: Match.objectLike({
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
      }),
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
  });

  it('follows a declaration with more indexes and other key types', () => {
    const decl: TableDeclaration = {
      partitionKey: { name: 'id', type: 'S' },
      sortKey: { name: 'n', type: 'N' },
      globalIndexes: [
        { name: 'byA', partitionKey: { name: 'apk', type: 'S' }, sortKey: { name: 'ask', type: 'N' } },
        { name: 'byB', partitionKey: { name: 'bpk', type: 'B' }, sortKey: { name: 'n', type: 'N' } },
      ],
      ttlAttribute: 'expires',
    };
    const t = Template.fromStack(new DataStack(new App(), 'Custom', { declaration: decl }));
    t.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: keySchema('id', 'n'),
      AttributeDefinitions: Match.arrayWith([
        { AttributeName: 'n', AttributeType: 'N' },
        { AttributeName: 'bpk', AttributeType: 'B' },
      ]),
      GlobalSecondaryIndexes: [
        Match.objectLike({ IndexName: 'byA', KeySchema: keySchema('apk', 'ask') }),
        Match.objectLike({ IndexName: 'byB', KeySchema: keySchema('bpk', 'n') }),
      ],
      TimeToLiveSpecification: { AttributeName: 'expires', Enabled: true },
    });
  });
});

describe('grantItemAccess', () => {
  it('grants item actions on the table and each declared index by name, nothing else', () => {
    const app = new App();
    const data = new DataStack(app, 'Data');
    const stack = new Stack(app, 'User');
    const role = new Role(stack, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    grantItemAccess(data.table, role);

    const statements = Object.values(Template.fromStack(stack).findResources('AWS::IAM::Policy')).flatMap(
      (p) => p.Properties.PolicyDocument.Statement as { Action: string[]; Resource: unknown[] }[],
    );
    expect(statements).toHaveLength(1);
    const [statement] = statements;
    expect([...(statement?.Action ?? [])].sort()).toEqual([...ITEM_ACTIONS].sort());
    expect(statement?.Action).not.toContain('dynamodb:Scan');
    const resources = JSON.stringify(statement?.Resource);
    expect(statement?.Resource).toHaveLength(1 + TABLE.globalIndexes.length);
    for (const index of TABLE.globalIndexes) expect(resources).toContain(`/index/${index.name}"`);
    expect(resources).not.toContain('*');
  });
});
