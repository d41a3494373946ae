/**
 * The admin console in AWS: its built files (dist/console/) in a private S3 bucket behind a
 * CloudFront distribution (origin access control), with `/v1/*` sent to the REST API as a second
 * origin. Page and API then share one origin, so the session cookie stays SameSite=Strict and
 * first-party and no CORS is needed. A CloudFront function answers `/` and `/console` with a
 * redirect and serves index.html for the app's page paths (SPA fallback) without the
 * distribution-wide error pages that would also rewrite the API's own 403 and 404 answers.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Duration, RemovalPolicy, Stack, Validations, type CfnElement, type StackProps } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  Function as CloudFrontFunction,
  FunctionCode,
  FunctionEventType,
  FunctionRuntime,
  HeadersFrameOption,
  HeadersReferrerPolicy,
  OriginRequestPolicy,
  PriceClass,
  ResponseHeadersPolicy,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { RestApiOrigin, S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { BlockPublicAccess, Bucket, BucketEncryption } from 'aws-cdk-lib/aws-s3';
import { BucketDeployment, CacheControl, Source } from 'aws-cdk-lib/aws-s3-deployment';
import type { Construct } from 'constructs';
import { CONSOLE_SECURITY_HEADERS } from '../../lambdas/local/console-static.ts';

export interface ConsoleStackProps extends StackProps {
  readonly api: RestApi;
  /** The built console; when it does not exist (not built yet) the bucket is created empty. */
  readonly consoleDir: string;
}

/** Viewer-request function: redirects to /console/, and page paths (no file extension) get index.html. */
const ROUTING_FUNCTION = `function handler(event) {
  var r = event.request;
  var uri = r.uri;
  if (uri === '/' || uri === '/console') return { statusCode: 308, statusDescription: 'Permanent Redirect', headers: { location: { value: '/console/' } } };
  if (uri.indexOf('/console/') === 0 && uri.slice(uri.lastIndexOf('/') + 1).indexOf('.') < 0) r.uri = '/console/index.html';
  return r;
}`;

export class ConsoleStack extends Stack {
  readonly bucket: Bucket;
  readonly distribution: Distribution;

  constructor(scope: Construct, id: string, props: ConsoleStackProps) {
    super(scope, id, props);
    this.bucket = new Bucket(this, 'Files', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      // Only built files, redeployed from the repository: nothing to keep.
      removalPolicy: RemovalPolicy.DESTROY,
      autoDeleteObjects: false,
    });
    const headers = new ResponseHeadersPolicy(this, 'SecurityHeaders', {
      comment: 'Gantry console: strict CSP, no framing, no sniffing, no referrer',
      securityHeadersBehavior: {
        contentSecurityPolicy: { contentSecurityPolicy: CONSOLE_SECURITY_HEADERS['content-security-policy'] ?? "default-src 'self'", override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: HeadersReferrerPolicy.NO_REFERRER, override: true },
        strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: true, override: true },
      },
    });
    const routing = new CloudFrontFunction(this, 'Routing', { code: FunctionCode.fromInline(ROUTING_FUNCTION), runtime: FunctionRuntime.JS_2_0 });
    this.distribution = new Distribution(this, 'Distribution', {
      comment: 'Gantry admin console and API',
      priceClass: PriceClass.PRICE_CLASS_100,
      defaultBehavior: {
        origin: S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        responseHeadersPolicy: headers,
        functionAssociations: [{ function: routing, eventType: FunctionEventType.VIEWER_REQUEST }],
      },
      additionalBehaviors: {
        // The API as it is: every method, no caching, every header but Host (the cookie included).
        'v1/*': {
          origin: new RestApiOrigin(props.api),
          viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
          allowedMethods: AllowedMethods.ALLOW_ALL,
          cachePolicy: CachePolicy.CACHING_DISABLED,
          originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
        },
      },
    });
    if (existsSync(path.join(props.consoleDir, 'index.html'))) this.#deploy(props.consoleDir);
    this.#acknowledge();
  }

  /** Uploads the build under console/: hashed assets cached a year, everything else revalidated. */
  #deploy(dir: string): void {
    const common = { destinationBucket: this.bucket, distribution: this.distribution, memoryLimit: 512 };
    const parts = [
      { id: 'Assets', exclude: ['*', '!assets', '!assets/**'], cache: 'public, max-age=31536000, immutable' },
      { id: 'Pages', exclude: ['assets', 'assets/**', '.source-hash'], cache: 'no-cache' },
    ];
    for (const part of parts) {
      new BucketDeployment(this, part.id, {
        ...common,
        sources: [Source.asset(dir, { exclude: part.exclude })],
        destinationKeyPrefix: 'console/',
        prune: false,
        cacheControl: [CacheControl.fromString(part.cache)],
      });
    }
  }

  #acknowledge(): void {
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'The bucket holds only the built console, read through CloudFront (whose standard logs can be turned on); server access logs would repeat them.',
    });
    Validations.of(this.distribution).acknowledge(
      { id: 'AwsSolutions-CFR1', reason: 'An admin console and API for any region the operator serves; geo restriction is the operator’s choice.' },
      { id: 'AwsSolutions-CFR2', reason: 'The API authenticates every call and rate-limits at API Gateway; a WAF web ACL can be attached by the operator.' },
      { id: 'AwsSolutions-CFR3', reason: 'API Gateway logs every API call; access logs of static files are left to the operator.' },
      {
        id: 'AwsSolutions-CFR4',
        reason:
          'The default CloudFront certificate allows TLSv1 by design; a custom domain and certificate with minimumProtocolVersion TLS_V1_2_2021 enforces TLS 1.2 (without a certificate CloudFront ignores the setting).',
      },
    );
    // The deployment's singleton function is CDK's own custom resource, run only during deploys.
    const copier = this.node.children.find((c) => c.node.id.startsWith('Custom::CDKBucketDeployment'));
    if (copier) {
      const wildcards = [
        'Action::s3:GetObject*',
        'Action::s3:GetBucket*',
        'Action::s3:List*',
        'Action::s3:DeleteObject*',
        'Action::s3:Abort*',
        'Resource::*',
        `Resource::<${this.getLogicalId(this.bucket.node.defaultChild as CfnElement)}.Arn>/*`,
        'Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*',
      ];
      Validations.of(copier).acknowledge(
        {
          id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
          reason: 'CDK’s BucketDeployment custom resource uses the AWS basic execution managed policy.',
        },
        ...wildcards.map((w) => ({
          id: `AwsSolutions-IAM5[${w}]`,
          reason: 'CDK’s BucketDeployment custom resource copies the build from the CDK asset bucket into this bucket (object wildcards).',
        })),
      );
    }
    Validations.of(this).acknowledge(
      { id: 'AwsSolutions-L1', reason: 'CDK’s BucketDeployment custom resource pins its own runtime.' },
      { id: 'Serverless-LambdaTracing', reason: 'CDK’s BucketDeployment custom resource runs only during deploys.' },
      { id: 'Serverless-LambdaDLQ', reason: 'CDK’s BucketDeployment custom resource is invoked by CloudFormation synchronously.' },
      { id: 'Serverless-LambdaDefaultMemorySize', reason: 'CDK’s BucketDeployment custom resource; memory set to 512 MB.' },
      { id: 'Serverless-LambdaLatestVersion', reason: 'CDK’s BucketDeployment custom resource pins its own runtime.' },
      { id: 'Serverless-LambdaAsyncFailureDestination', reason: 'CDK’s BucketDeployment custom resource is invoked by CloudFormation synchronously.' },
    );
  }
}
