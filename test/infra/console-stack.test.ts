/**
 * The console stack: a private bucket read by CloudFront through origin access control, `/v1/*`
 * sent uncached to the REST API (so the session cookie stays first-party), the security headers,
 * the SPA routing function, the upload of a built console, and no unacknowledged cdk-nag finding.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type GantryApp } from '../../infra/app-builder.ts';

const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

function builtConsole(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gantry-console-cdk-'));
  mkdirSync(path.join(dir, 'assets'));
  writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>Gantry</title>');
  writeFileSync(path.join(dir, 'assets', 'index-Bx7kQ2mZ.js'), 'void 0;');
  return dir;
}

type Json = Record<string, unknown>;

describe('console stack', () => {
  let gantry: GantryApp;
  let template: Template;
  let distribution: Json;

  beforeAll(() => {
    gantry = buildApp({ appProps: { context: NO_BUNDLING }, consoleDir: builtConsole() });
    template = Template.fromStack(gantry.console);
    const found = Object.values(template.findResources('AWS::CloudFront::Distribution'));
    expect(found).toHaveLength(1);
    distribution = (found[0]?.Properties as { DistributionConfig: Json }).DistributionConfig;
  });

  it('keeps the bucket private and lets only the distribution read it (origin access control)', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
    });
    template.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({ Action: 's3:GetObject', Principal: { Service: 'cloudfront.amazonaws.com' }, Effect: 'Allow' }),
        ]),
      },
    });
  });

  it('sends /v1/* to the REST API uncached with every method and the cookie, and the rest to the bucket', () => {
    const origins = distribution.Origins as Json[];
    expect(origins).toHaveLength(2);
    const apiOrigin = origins.find((o) => o.CustomOriginConfig !== undefined);
    // The stage's path ('/' + the stage name, prod).
    expect(JSON.stringify(apiOrigin?.OriginPath)).toMatch(/"\/"/);
    expect(JSON.stringify(apiOrigin?.DomainName)).toContain('execute-api');
    const [v1] = distribution.CacheBehaviors as Json[];
    expect(v1).toMatchObject({
      PathPattern: 'v1/*',
      TargetOriginId: apiOrigin?.Id,
      ViewerProtocolPolicy: 'https-only',
      AllowedMethods: ['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE'],
      CachePolicyId: '4135ea2d-6df8-44a3-9df3-4b5a84be39ad', // CachingDisabled
      OriginRequestPolicyId: 'b689b0a8-53d0-40ab-baf2-68738e2966ac', // AllViewerExceptHostHeader (cookies included)
    });
    expect(distribution.DefaultCacheBehavior).toMatchObject({ ViewerProtocolPolicy: 'redirect-to-https' });
    // No distribution-wide error pages: they would rewrite the API's own 403 and 404 answers.
    expect(distribution.CustomErrorResponses).toBeUndefined();
  });

  it('answers the console with a strict CSP, no framing, nosniff, no referrer and HSTS', () => {
    template.hasResourceProperties('AWS::CloudFront::ResponseHeadersPolicy', {
      ResponseHeadersPolicyConfig: {
        SecurityHeadersConfig: {
          ContentSecurityPolicy: { ContentSecurityPolicy: Match.stringLikeRegexp("default-src 'self'.*frame-ancestors 'none'"), Override: true },
          ContentTypeOptions: { Override: true },
          FrameOptions: { FrameOption: 'DENY', Override: true },
          ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
          StrictTransportSecurity: Match.objectLike({ AccessControlMaxAgeSec: 31_536_000 }),
        },
      },
    });
    const csp = JSON.stringify(template.findResources('AWS::CloudFront::ResponseHeadersPolicy'));
    expect(csp).not.toContain('unsafe-inline');
  });

  it('routes page paths to index.html and redirects / and /console with a viewer-request function', () => {
    const fns = Object.values(template.findResources('AWS::CloudFront::Function'));
    expect(fns).toHaveLength(1);
    const code = (fns[0]?.Properties as { FunctionCode: string }).FunctionCode;
    // Run the function as CloudFront would, on a few requests.
    const handler = new Function(`${code}; return handler;`)() as (e: unknown) => { uri?: string; statusCode?: number; headers?: Json };
    const run = (uri: string) => handler({ request: { uri } });
    expect(run('/console/logs/123')).toMatchObject({ uri: '/console/index.html' });
    expect(run('/console/')).toMatchObject({ uri: '/console/index.html' });
    expect(run('/console/assets/index-Bx7kQ2mZ.js')).toMatchObject({ uri: '/console/assets/index-Bx7kQ2mZ.js' });
    expect(run('/console')).toMatchObject({ statusCode: 308, headers: { location: { value: '/console/' } } });
    expect(run('/')).toMatchObject({ statusCode: 308 });
    expect((distribution.DefaultCacheBehavior as Json).FunctionAssociations).toEqual([expect.objectContaining({ EventType: 'viewer-request' })]);
  });

  it('uploads the built console under console/: hashed assets cached a year, pages revalidated', () => {
    const deployments = Object.values(template.findResources('Custom::CDKBucketDeployment')).map((r) => r.Properties as Json);
    expect(deployments).toHaveLength(2);
    expect(deployments.map((d) => d.DestinationBucketKeyPrefix)).toEqual(['console/', 'console/']);
    expect(deployments.map((d) => d.SystemMetadata)).toEqual(
      expect.arrayContaining([{ 'cache-control': 'public, max-age=31536000, immutable' }, { 'cache-control': 'no-cache' }]),
    );
  });

  it('has no unacknowledged AwsSolutions or Serverless findings', () => {
    for (const pack of [new AwsSolutionsChecks(), new ServerlessChecks()]) {
      const report = pack.validateScope(gantry.console);
      expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`)).toEqual([]);
    }
    const annotations = Annotations.fromStack(gantry.console as Stack);
    expect(annotations.findError('*', Match.anyValue())).toEqual([]);
  });
});
