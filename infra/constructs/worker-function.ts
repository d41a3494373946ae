/**
 * A worker Lambda (queue consumer or scheduled job) built like the API functions: Node.js 24 on
 * arm64, an ESM bundle by esbuild, JSON logs in its own log group, X-Ray, and a role of its own
 * that may write to that log group only until grants add more.
 */
import { fileURLToPath } from 'node:url';
import { Validations, type Duration } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

// The ESM bundle still contains CommonJS dependencies that call require(); give them one.
const REQUIRE_SHIM = "import { createRequire } from 'module'; const require = createRequire(import.meta.url);";

export interface WorkerFunctionProps {
  /** The handler file, relative to the repository root (`lambdas/workers/<name>/handler.ts`). */
  readonly entry: string;
  readonly service: string;
  readonly timeout: Duration;
  readonly memorySize?: number;
  readonly environment?: Record<string, string>;
}

export class WorkerFunction extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, props: WorkerFunctionProps) {
    super(scope, id);
    const logGroup = new LogGroup(this, 'Logs', { retention: RetentionDays.ONE_MONTH });
    const role = new Role(this, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    logGroup.grantWrite(role);
    this.fn = new NodejsFunction(this, 'Function', {
      entry: `${ROOT}${props.entry}`,
      handler: 'handler',
      depsLockFilePath: `${ROOT}package-lock.json`,
      projectRoot: ROOT,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      role,
      logGroup,
      loggingFormat: LoggingFormat.JSON,
      tracing: Tracing.ACTIVE,
      environment: { POWERTOOLS_SERVICE_NAME: props.service, ...props.environment },
      bundling: {
        format: OutputFormat.ESM,
        target: 'node24',
        minify: true,
        sourceMap: false,
        mainFields: ['module', 'main'],
        // The Node.js runtime ships AWS SDK v3.
        externalModules: ['@aws-sdk/*'],
        banner: REQUIRE_SHIM,
      },
    });
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'X-Ray PutTraceSegments and PutTelemetryRecords do not support resource-level permissions.',
    });
  }
}
