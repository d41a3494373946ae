/**
 * Realtime on AWS: API Gateway's WebSocket API (`wss://<id>.execute-api.<region>.amazonaws.com/prod`)
 * with `$connect`, `$default` and `$disconnect` routed to the realtime function, which
 * authenticates at `$connect`, relays to the provider and posts provider events back through the
 * stage's `@connections` API (docs/realtime.md). Its own stack: a WebSocket API is another front
 * door, deployed and replaced without touching the REST API.
 */
import { CfnOutput, Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { LogGroupLogDestination, WebSocketApi, WebSocketStage, type CfnApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { alarmOnAny, ALARM_PERIOD } from '../constructs/any-alarm.ts';
import { WorkerFunction } from '../constructs/worker-function.ts';
import { CREDENTIALS_ENCRYPT_DECRYPT, grantCredentialsKey, grantItemAccess } from './data-stack.ts';
import { STAGE_NAME } from './api-stack.ts';

export const REALTIME_ENTRY = 'lambdas/realtime/handler.ts';

/** A `$default` invocation waits at most this long for the provider: under API Gateway's 29 s integration timeout. */
export const REALTIME_MAX_WAIT_MS = 25_000;

const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    connectionId: '$context.connectionId',
    routeKey: '$context.routeKey',
    eventType: '$context.eventType',
    ip: '$context.identity.sourceIp',
    requestTime: '$context.requestTimeEpoch',
    status: '$context.status',
    integrationLatency: '$context.integrationLatency',
    integrationError: '$context.integrationErrorMessage',
    error: '$context.error.message',
  }),
);

export interface RealtimeStackProps extends StackProps {
  readonly table: ITable;
  /** Encrypts the session's upgrade request (its credentials) in the table, and decrypts managed providers' keys. */
  readonly credentialsKey: IKey;
  readonly memoryMb?: number;
  /** Where its alarms notify (the monitoring stack's topic). */
  readonly alarmTopic?: ITopic;
}

export class RealtimeStack extends Stack {
  readonly api: WebSocketApi;
  readonly stage: WebSocketStage;
  readonly fn: LambdaFunction;

  constructor(scope: Construct, id: string, props: RealtimeStackProps) {
    super(scope, id, props);
    const worker = new WorkerFunction(this, 'Realtime', {
      entry: REALTIME_ENTRY,
      service: 'gantry-realtime',
      // An invocation: a `$default` waits up to 25 s, plus the log's delivery at `$disconnect`.
      timeout: Duration.seconds(35),
      memorySize: props.memoryMb ?? 512,
      environment: {
        TABLE_NAME: props.table.tableName,
        CIPHER_KMS_KEY_ID: props.credentialsKey.keyArn,
        GW_REALTIME_MAX_WAIT_MS: String(REALTIME_MAX_WAIT_MS),
      },
    });
    this.fn = worker.fn;
    grantItemAccess(props.table, this.fn);
    grantCredentialsKey(props.credentialsKey, this.fn, CREDENTIALS_ENCRYPT_DECRYPT);

    const integration = (name: string) => ({ integration: new WebSocketLambdaIntegration(name, this.fn) });
    this.api = new WebSocketApi(this, 'Api', {
      apiName: 'gantry-realtime',
      description: 'Gantry realtime WebSocket proxy (GET /v1/realtime?model=... on the REST API answers 426)',
      connectRouteOptions: integration('ConnectIntegration'),
      disconnectRouteOptions: integration('DisconnectIntegration'),
      defaultRouteOptions: integration('DefaultIntegration'),
    });
    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: RetentionDays.ONE_MONTH });
    this.stage = new WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName: STAGE_NAME,
      autoDeploy: true,
      throttle: { rateLimit: 500, burstLimit: 1000 },
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs), format: ACCESS_LOG_FORMAT },
    });
    // execute-api:ManageConnections on this stage's connections only.
    this.stage.grantManagementApiAccess(this.fn);

    if (props.alarmTopic) this.alarms(props.alarmTopic);
    new CfnOutput(this, 'RealtimeUrl', { value: `${this.stage.url}?model=<model>`, description: 'Realtime WebSocket URL' });
    this.acknowledgeFindings();
  }

  /** Its own alarms, beside the monitoring stack's (which watches the REST API's and the workers' functions). */
  private alarms(topic: ITopic): void {
    const period = ALARM_PERIOD;
    alarmOnAny(this, 'ErrorsRealtime', this.fn.metricErrors({ period, statistic: 'Sum' }), 'The realtime function failed (errors reported by Lambda)', topic);
    alarmOnAny(
      this,
      'ThrottlesRealtime',
      this.fn.metricThrottles({ period, statistic: 'Sum' }),
      'The realtime function was throttled (concurrency limit reached)',
      topic,
    );
  }

  private acknowledgeFindings(): void {
    const apiId = this.getLogicalId(this.api.node.defaultChild as CfnApi);
    Validations.of(this.fn.role!).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${apiId}>/${STAGE_NAME}/*/@connections/*]`,
      reason: 'Connection ids are assigned by API Gateway at run time; ManageConnections is limited to this API stage’s @connections.',
    });
    for (const route of this.api.node.findAll().filter((c) => c.node.id.endsWith('-Route'))) {
      Validations.of(route).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason:
          'The realtime function authenticates $connect itself with the gateway key or JWT (header or subprotocol), exactly as the local upgrade; API Gateway authorizers cannot read those keys.',
      });
    }
    Validations.of(this.fn).acknowledge(
      { id: 'Serverless-LambdaDLQ', reason: 'Synchronous API Gateway WebSocket invocations only; errors are returned to API Gateway.' },
      {
        id: 'Serverless-LambdaAsyncFailureDestination',
        reason: 'Synchronous API Gateway WebSocket invocations only; there is no asynchronous failure to route.',
      },
    );
  }
}
