/**
 * A worker Lambda (queue consumer or scheduled job) built like the API functions: Node.js 24 on
 * arm64, an ESM bundle by esbuild, JSON logs in its own log group, X-Ray, and a role of its own
 * that may write to that log group only until grants add more.
 */
import { Validations, type Duration } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Function as LambdaFunction, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { lambdaCode, LAMBDA_HANDLER } from '../lambda-code.ts';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

export interface WorkerFunctionProps {
  /** The handler file, relative to the repository root (`lambdas/workers/<name>/handler.ts`). */
  readonly entry: string;
  readonly service: string;
  readonly timeout: Duration;
  readonly memorySize?: number;
  readonly environment?: Record<string, string>;
}

export class WorkerFunction extends Construct {
  readonly fn: LambdaFunction;

  constructor(scope: Construct, id: string, props: WorkerFunctionProps) {
    super(scope, id);
    const logGroup = new LogGroup(this, 'Logs', { retention: RetentionDays.ONE_MONTH });
    const role = new Role(this, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    logGroup.grantWrite(role);
    this.fn = new LambdaFunction(this, 'Function', {
      code: lambdaCode(props.entry),
      handler: LAMBDA_HANDLER,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      role,
      logGroup,
      loggingFormat: LoggingFormat.JSON,
      tracing: Tracing.ACTIVE,
      environment: { POWERTOOLS_SERVICE_NAME: props.service, ...props.environment },
    });
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'X-Ray PutTraceSegments and PutTelemetryRecords do not support resource-level permissions.',
    });
  }
}
