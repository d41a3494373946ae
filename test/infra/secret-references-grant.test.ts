/**
 * aws_sm secret references are read with the gateway's own role: it may call GetSecretValue on
 * secrets under the deployment's prefix only (`gantry:secretsPrefix`, default `gantry/*`), the
 * admin function not at all, and cdk-nag stays clean with the prefix's wildcard acknowledged.
 */
import { Stack, type CfnResource } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../infra/app-builder.ts';
import { readSettings } from '../../infra/settings.ts';

const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

interface RoleProps {
  Policies?: { PolicyName: string; PolicyDocument: { Statement: { Action: unknown; Resource: unknown; Effect: string }[] } }[];
}

function roleOf(template: Template, fn: { node: { defaultChild?: unknown } }): RoleProps {
  const child = fn.node.defaultChild as CfnResource;
  const fnId = Stack.of(child).getLogicalId(child);
  const props = template.findResources('AWS::Lambda::Function')[fnId]?.Properties as { Role: { 'Fn::GetAtt': string[] } };
  return template.findResources('AWS::IAM::Role')[props.Role['Fn::GetAtt'][0] ?? '']?.Properties as RoleProps;
}

function secretsStatements(role: RoleProps) {
  return (role.Policies ?? []).flatMap((p) => p.PolicyDocument.Statement).filter((s) => JSON.stringify(s.Action).includes('secretsmanager:'));
}

describe('secret references grant', () => {
  it('lets the gateway read gantry/* secrets only, and the admin function none', () => {
    const gantry = buildApp({ appProps: { context: NO_BUNDLING } });
    const template = Template.fromStack(gantry.api);
    const statements = secretsStatements(roleOf(template, gantry.api.gateway));
    expect(statements).toHaveLength(1);
    expect(statements[0]?.Action).toBe('secretsmanager:GetSecretValue');
    expect(statements[0]?.Effect).toBe('Allow');
    expect(JSON.stringify(statements[0]?.Resource)).toMatch(/:secretsmanager:.*:secret:gantry\/\*"/);
    expect(secretsStatements(roleOf(template, gantry.api.admin))).toEqual([]);
    const report = new AwsSolutionsChecks().validateScope(gantry.app);
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });

  it('follows gantry:secretsPrefix and refuses a malformed one', () => {
    const gantry = buildApp({ appProps: { context: { ...NO_BUNDLING, 'gantry:secretsPrefix': 'team-a/openai-*' } } });
    const statements = secretsStatements(roleOf(Template.fromStack(gantry.api), gantry.api.gateway));
    expect(JSON.stringify(statements[0]?.Resource)).toMatch(/:secret:team-a\/openai-\*"/);
    expect(() => readSettings((k) => (k === 'gantry:secretsPrefix' ? 'bad prefix!' : undefined))).toThrow(/gantry:secretsPrefix/);
  });
});
