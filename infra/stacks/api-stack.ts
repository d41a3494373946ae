import { ArnFormat, Aws, CfnOutput, Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import {
  AccessLogField,
  AccessLogFormat,
  AuthorizationType,
  EndpointType,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  ResponseTransferMode,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyDocument, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Function as LambdaFunction, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { lambdaCode, LAMBDA_HANDLER, type LambdaAssets } from '../lambda-code.ts';
import { DOCS_ASSET_DIR, DOCS_ASSETS } from '../../layers/core/src/openapi/routes.ts';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { ADMIN_PREFIXES, ADMIN_V2_PREFIXES, GATEWAY_PATHS_UNDER_ADMIN } from '../../layers/core/src/http/prefixes.ts';
import { DEFAULT_MEMORY_MB, type FunctionName } from '../settings.ts';
import { CREDENTIALS_ENCRYPT_DECRYPT, grantCredentialsKey, grantItemAccess, grantObjectAccess } from './data-stack.ts';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { IBucket } from 'aws-cdk-lib/aws-s3';

export const GATEWAY_ENTRY = 'lambdas/gateway/handler.ts';
export const ADMIN_ENTRY = 'lambdas/admin/handler.ts';

/** Stage name in the invoke URL: https://<id>.execute-api.<region>.amazonaws.com/prod/v1/... */
export const STAGE_NAME = 'prod';

// JSON, so Logs Insights can query it; latencies and integration errors separate API Gateway time
// from function time.
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: AccessLogField.contextRequestId(),
    ip: AccessLogField.contextIdentitySourceIp(),
    userAgent: AccessLogField.contextIdentityUserAgent(),
    requestTime: AccessLogField.contextRequestTimeEpoch(),
    method: AccessLogField.contextHttpMethod(),
    path: AccessLogField.contextPath(),
    status: AccessLogField.contextStatus(),
    responseLength: AccessLogField.contextResponseLength(),
    responseLatency: AccessLogField.contextResponseLatency(),
    integrationLatency: AccessLogField.contextIntegrationLatency(),
    integrationStatus: AccessLogField.contextIntegrationStatus(),
    integrationError: AccessLogField.contextIntegrationErrorMessage(),
    error: AccessLogField.contextErrorMessage(),
    xrayTraceId: AccessLogField.contextXrayTraceId(),
  }),
);

export interface ApiStackProps extends StackProps {
  readonly table: ITable;
  readonly blobs: IBucket;
  /** The KMS key that encrypts provider credentials (CIPHER_KMS_KEY_ID). */
  readonly credentialsKey: IKey;
  /** Steady-state requests per second for the whole stage, before API Gateway answers 429. */
  readonly throttlingRateLimit?: number;
  /** Burst bucket size for the whole stage. */
  readonly throttlingBurstLimit?: number;
  /** Memory (MB) by function (`gateway`, `admin`); defaults from infra/settings.ts. */
  readonly memoryMb?: Partial<Record<FunctionName, number>>;
  /** Concurrency reserved for (and capping) the gateway function; none by default. */
  readonly gatewayReservedConcurrency?: number;
  /** Roles the gateway may assume (Bedrock integrations naming a role); none by default. */
  readonly assumableRoleArns?: readonly string[];
  /** Secrets Manager names the gateway may read (aws_sm secret references); default `gantry/*`. */
  readonly secretsPrefix?: string;
  /**
   * The batch state machine's name (BatchesStack): the gateway starts its executions. Its ARN is
   * built from the name, not referenced, so this stack does not depend on the batches stack.
   */
  readonly batchStateMachineName?: string;
}

interface FunctionSpec {
  readonly entry: string;
  readonly service: string;
  readonly memorySize: number;
  readonly reservedConcurrentExecutions?: number | undefined;
  readonly timeout: Duration;
  readonly table: ITable;
  readonly blobs: IBucket;
  readonly credentialsKey?: IKey;
  /** Named inline policies of the function's role, beside its default policy. */
  readonly inlinePolicies?: Record<string, PolicyDocument>;
  /** Static files the function serves, copied beside its bundle. */
  readonly assets?: LambdaAssets;
}

/** The REST API with the gateway function (streamed) and the admin function (buffered). */
export class ApiStack extends Stack {
  readonly api: RestApi;
  readonly gateway: LambdaFunction;
  readonly admin: LambdaFunction;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, props);

    this.gateway = this.nodeFunction('Gateway', {
      entry: GATEWAY_ENTRY,
      service: 'gantry-gateway',
      memorySize: props.memoryMb?.gateway ?? DEFAULT_MEMORY_MB.gateway,
      reservedConcurrentExecutions: props.gatewayReservedConcurrency,
      // Matches the streamed integration: a long completion may run for the full 15 minutes.
      timeout: Duration.minutes(15),
      table: props.table,
      blobs: props.blobs,
      credentialsKey: props.credentialsKey,
      inlinePolicies: {
        SecretReferences: secretReferencesPolicy(props.secretsPrefix ?? 'gantry/*'),
        ...(props.batchStateMachineName ? { BatchExecutions: this.batchExecutionsPolicy(props.batchStateMachineName) } : {}),
      },
    });
    if (props.batchStateMachineName) this.gateway.addEnvironment('BATCH_STATE_MACHINE_ARN', this.batchStateMachineArn(props.batchStateMachineName));
    this.admin = this.nodeFunction('Admin', {
      entry: ADMIN_ENTRY,
      service: 'gantry-admin',
      // The API reference page's script and styles (GET /v1/docs).
      assets: Object.fromEntries(Object.keys(DOCS_ASSETS).map((f) => [`node_modules/swagger-ui-dist/${f}`, `${DOCS_ASSET_DIR}/${f}`])),
      memorySize: props.memoryMb?.admin ?? DEFAULT_MEMORY_MB.admin,
      timeout: Duration.seconds(30),
      table: props.table,
      blobs: props.blobs,
      credentialsKey: props.credentialsKey,
    });
    // The gateway reads keys and configs and writes health probes and limit counters; the admin
    // function manages every entity. Both get item actions only, on the table and its indexes.
    grantItemAccess(props.table, this.gateway);
    grantItemAccess(props.table, this.admin);
    grantObjectAccess(props.blobs, this.gateway);
    grantObjectAccess(props.blobs, this.admin);
    // Stored credentials: both functions decrypt and seal them (the gateway seals a batch's provider
    // credentials for its lines, and MCP sessions; the admin function stored credentials).
    grantCredentialsKey(props.credentialsKey, this.gateway, CREDENTIALS_ENCRYPT_DECRYPT);
    grantCredentialsKey(props.credentialsKey, this.admin, CREDENTIALS_ENCRYPT_DECRYPT);
    const secretsPrefix = props.secretsPrefix ?? 'gantry/*';
    if (secretsPrefix.includes('*')) {
      Validations.of(this.gateway.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${secretsPrefix}]`,
        reason: 'Secret references name their secrets at run time; GetSecretValue is limited to the deployment prefix (gantry:secretsPrefix).',
      });
    }
    if (props.assumableRoleArns?.length) {
      // Only the roles the deployment lists: an integration naming another role is refused by STS.
      this.gateway.addToRolePolicy(new PolicyStatement({ actions: ['sts:AssumeRole'], resources: [...props.assumableRoleArns] }));
      for (const arn of props.assumableRoleArns.filter((a) => a.includes('*'))) {
        Validations.of(this.gateway.role!).acknowledge({
          id: `AwsSolutions-IAM5[Resource::${arn}]`,
          reason: 'A role pattern the deployment listed in gantry:assumableRoleArns.',
        });
      }
    }

    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: RetentionDays.ONE_MONTH });
    this.api = new RestApi(this, 'Api', {
      restApiName: 'gantry',
      description: 'Gantry AI gateway and admin API',
      endpointTypes: [EndpointType.REGIONAL],
      // Multipart uploads (files, audio) must reach the function unmangled, so every request body
      // arrives base64-encoded and the handler decodes it.
      binaryMediaTypes: ['*/*'],
      // Access and execution logging need the account-level CloudWatch role; keep it on delete so
      // other APIs in the account do not lose logging.
      cloudWatchRole: true,
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      deployOptions: {
        stageName: STAGE_NAME,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: ACCESS_LOG_FORMAT,
        // Errors only, and never request or response bodies: they carry prompts and credentials.
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: true,
        tracingEnabled: true,
        throttlingRateLimit: props.throttlingRateLimit ?? 1000,
        throttlingBurstLimit: props.throttlingBurstLimit ?? 2000,
      },
      // Callers authenticate to the functions themselves (x-gw-api-key or a JWT).
      defaultMethodOptions: { authorizationType: AuthorizationType.NONE },
    });

    // Invite links point at the API, never at whatever Host a request claimed.
    this.admin.addEnvironment('GW_PUBLIC_URL', `https://${this.api.restApiId}.execute-api.${this.region}.${this.urlSuffix}/${STAGE_NAME}`);

    const v1 = this.api.root.addResource('v1');
    const gatewayIntegration = new LambdaIntegration(this.gateway, {
      responseTransferMode: ResponseTransferMode.STREAM,
      // Streamed integrations may run up to 15 minutes without a quota increase.
      timeout: Duration.minutes(15),
    });
    v1.addResource('{proxy+}').addMethod('ANY', gatewayIntegration);

    // One permission for all admin routes, so the function policy does not grow with each prefix.
    const adminIntegration = new LambdaIntegration(this.admin, { scopePermissionToMethod: false });
    for (const prefix of ADMIN_PREFIXES) {
      const resource = v1.addResource(prefix);
      resource.addMethod('ANY', adminIntegration);
      const gatewayPaths = GATEWAY_PATHS_UNDER_ADMIN.filter((p) => p.startsWith(`${prefix}/`)).map((p) => p.slice(prefix.length + 1).split('/'));
      if (!gatewayPaths.length) {
        resource.addResource('{proxy+}').addMethod('ANY', adminIntegration);
        continue;
      }
      // `{promptId}` beside `{proxy+}` is refused by API Gateway: one segment, then the rest.
      for (const [param = '', ...rest] of gatewayPaths) {
        const item = resource.getResource(param) ?? resource.addResource(param);
        if (!item.getResource('{proxy+}')) {
          item.addMethod('ANY', adminIntegration);
          item.addResource('{proxy+}').addMethod('ANY', adminIntegration);
        }
        let leaf = item;
        for (const part of rest) leaf = leaf.getResource(part) ?? leaf.addResource(part);
        leaf.addMethod('ANY', gatewayIntegration);
      }
    }

    // `/v2/...` is admin only (the MCP server connection routes, docs/design/spec.md#surfaces-and-paths).
    const v2 = this.api.root.addResource('v2');
    for (const prefix of ADMIN_V2_PREFIXES) {
      const resource = v2.addResource(prefix);
      resource.addMethod('ANY', adminIntegration);
      resource.addResource('{proxy+}').addMethod('ANY', adminIntegration);
    }

    // The MCP gateway's own path (`/mcp/{server-slug}`), beside `/v1/mcp/{server-slug}` above.
    this.api.root.addResource('mcp').addResource('{slug}').addMethod('ANY', gatewayIntegration);

    new CfnOutput(this, 'ApiUrl', { value: this.api.url, description: 'Base URL; requests go to <url>v1/...' });

    this.acknowledgeApiFindings();
  }

  private batchStateMachineArn(name: string): string {
    return this.formatArn({ service: 'states', resource: 'stateMachine', resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
  }

  /** `POST /v1/batches` starts an execution of the batch state machine (named after the batch), and nothing else. */
  private batchExecutionsPolicy(name: string): PolicyDocument {
    return new PolicyDocument({ statements: [new PolicyStatement({ actions: ['states:StartExecution'], resources: [this.batchStateMachineArn(name)] })] });
  }

  private nodeFunction(id: string, spec: FunctionSpec): LambdaFunction {
    const logGroup = new LogGroup(this, `${id}Logs`, { retention: RetentionDays.ONE_MONTH });
    // An explicit role instead of AWSLambdaBasicExecutionRole: it may write to its own log group only.
    const role = new Role(this, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      ...(spec.inlinePolicies ? { inlinePolicies: spec.inlinePolicies } : {}),
    });
    logGroup.grantWrite(role);

    const fn = new LambdaFunction(this, id, {
      code: lambdaCode(spec.entry, spec.assets),
      handler: LAMBDA_HANDLER,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: spec.memorySize,
      ...(spec.reservedConcurrentExecutions ? { reservedConcurrentExecutions: spec.reservedConcurrentExecutions } : {}),
      timeout: spec.timeout,
      role,
      logGroup,
      loggingFormat: LoggingFormat.JSON,
      tracing: Tracing.ACTIVE,
      environment: {
        TABLE_NAME: spec.table.tableName,
        BLOB_BUCKET: spec.blobs.bucketName,
        POWERTOOLS_SERVICE_NAME: spec.service,
        ...(spec.credentialsKey ? { CIPHER_KMS_KEY_ID: spec.credentialsKey.keyArn } : {}),
      },
    });

    Validations.of(role).acknowledge(
      {
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'X-Ray PutTraceSegments and PutTelemetryRecords do not support resource-level permissions.',
      },
      {
        // cdk-nag names the resource by the cross-stack export of the bucket ARN (stable for <prefix>-Data/Blobs).
        id: `AwsSolutions-IAM5[Resource::${Stack.of(spec.blobs).stackName}:ExportsOutputFnGetAttBlobsF0F01DC6Arn220BCD82/*]`,
        reason: 'Object keys are generated at run time (cache/<hash>, files/<id>); access is limited to get, put and delete of objects in the one bucket.',
      },
    );
    // Invoked synchronously by API Gateway only: failures go back to the caller, so there is no
    // asynchronous event to dead-letter or redirect.
    Validations.of(fn).acknowledge(
      { id: 'Serverless-LambdaDLQ', reason: 'Synchronous API Gateway invocations only; errors are returned to the caller.' },
      {
        id: 'Serverless-LambdaAsyncFailureDestination',
        reason: 'Synchronous API Gateway invocations only; there is no asynchronous failure to route.',
      },
    );
    return fn;
  }

  private acknowledgeApiFindings(): void {
    const v = Validations.of(this.api);
    v.acknowledge(
      {
        id: 'AwsSolutions-APIG2',
        reason: 'Requests are validated in the functions against the same schemas that generate the OpenAPI document.',
      },
      {
        id: 'AwsSolutions-APIG3',
        reason: 'WAF is not part of the open-source default (cost, rules depend on the deployment); attach a web ACL to the stage where needed.',
      },
      {
        id: 'AwsSolutions-APIG4',
        reason: 'The functions authenticate every request with the x-gw-api-key header (or a JWT); API Gateway authorizers cannot read those keys.',
      },
      {
        id: 'AwsSolutions-COG4',
        reason: 'No Cognito user pool: callers use Gantry API keys checked by the functions.',
      },
      {
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        reason: 'The account-level API Gateway logging role needs the AWS-managed push-to-CloudWatch policy that AWS documents for it.',
      },
    );
  }
}

/** The secret ARN pattern of a name prefix (Secrets Manager appends `-XXXXXX` to every secret's ARN). */
export const secretsArnPattern = (prefix: string): string => `arn:${Aws.PARTITION}:secretsmanager:${Aws.REGION}:${Aws.ACCOUNT_ID}:secret:${prefix}`;

/**
 * aws_sm secret references read with the gateway's own role: GetSecretValue on secrets under the
 * deployment's prefix only (`gantry:secretsPrefix`), so a reference cannot name the service's own
 * secrets or another application's. Its own inline policy, so the prefix is audited on its own.
 */
function secretReferencesPolicy(prefix: string): PolicyDocument {
  return new PolicyDocument({ statements: [new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secretsArnPattern(prefix)] })] });
}
