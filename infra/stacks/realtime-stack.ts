/**
 * Realtime on AWS: API Gateway's WebSocket API (`wss://<id>.execute-api.<region>.amazonaws.com/prod`)
 * with `$connect`, `$default` and `$disconnect` routed to the relay, which authenticates at
 * `$connect`, relays to the provider and posts provider events back through the stage's
 * `@connections` API (docs/realtime.md). The relay is the realtime function (`relay: 'lambda'`,
 * the default: no idle cost) or the Fargate relay service (`relay: 'fargate'`,
 * constructs/fargate-relay.ts: one provider socket per session for its whole life). Its own stack:
 * a WebSocket API is another front door, deployed and replaced without touching the REST API.
 */
import { CfnOutput, Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { CfnRoute, LogGroupLogDestination, WebSocketApi, WebSocketStage, type CfnApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { ALERTS_QUEUE } from '../../layers/core/src/policy/limits/alerts.ts';
import { LOGS_QUEUE } from '../../layers/core/src/observability/messages.ts';
import { queueUrlVariable } from '../../layers/core/src/ports/queue-factory.ts';
import { alarmOnAny, ALARM_PERIOD } from '../constructs/any-alarm.ts';
import { FargateRelay } from '../constructs/fargate-relay.ts';
import { WorkerFunction } from '../constructs/worker-function.ts';
import { CREDENTIALS_ENCRYPT_DECRYPT, grantCredentialsKey, grantItemAccess } from './data-stack.ts';
import { STAGE_NAME } from './api-stack.ts';

export const REALTIME_ENTRY = 'lambdas/realtime/handler.ts';

const API_DESCRIPTION = 'Gantry realtime WebSocket proxy (GET /v1/realtime?model=... on the REST API answers 426)';

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
  /** Which relay serves the routes (`gantry:realtimeRelay`); default the Lambda function. */
  readonly relay?: 'lambda' | 'fargate';
  /** The Fargate relay's queues and runtime variables (the function gets them from the app, as every function does). */
  readonly logsQueue?: IQueue;
  readonly alertsQueue?: IQueue;
  readonly runtimeEnvironment?: Record<string, string>;
}

export class RealtimeStack extends Stack {
  readonly api: WebSocketApi;
  readonly stage: WebSocketStage;
  /** The Lambda relay (`relay: 'lambda'`). */
  readonly fn: LambdaFunction | undefined;
  /** The Fargate relay (`relay: 'fargate'`). */
  readonly relay: FargateRelay | undefined;

  constructor(scope: Construct, id: string, props: RealtimeStackProps) {
    super(scope, id, props);
    if (props.relay === 'fargate') {
      this.api = new WebSocketApi(this, 'Api', { apiName: 'gantry-realtime', description: API_DESCRIPTION });
      this.stage = this.#stage();
      this.fn = undefined;
      this.relay = this.#fargate(props);
    } else {
      this.relay = undefined;
      const fn = this.#lambda(props);
      this.fn = fn;
      this.api = new WebSocketApi(this, 'Api', {
        apiName: 'gantry-realtime',
        description: API_DESCRIPTION,
        connectRouteOptions: { integration: new WebSocketLambdaIntegration('ConnectIntegration', fn) },
        disconnectRouteOptions: { integration: new WebSocketLambdaIntegration('DisconnectIntegration', fn) },
        defaultRouteOptions: { integration: new WebSocketLambdaIntegration('DefaultIntegration', fn) },
      });
      this.stage = this.#stage();
      // execute-api:ManageConnections on this stage's connections only.
      this.stage.grantManagementApiAccess(fn);
      if (props.alarmTopic) this.alarms(fn, props.alarmTopic);
    }
    new CfnOutput(this, 'RealtimeUrl', { value: `${this.stage.url}?model=<model>`, description: 'Realtime WebSocket URL' });
    this.acknowledgeFindings();
  }

  #stage(): WebSocketStage {
    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: RetentionDays.ONE_MONTH });
    return new WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName: STAGE_NAME,
      autoDeploy: true,
      throttle: { rateLimit: 500, burstLimit: 1000 },
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs), format: ACCESS_LOG_FORMAT },
    });
  }

  /** The Fargate relay: its tasks get what the function would (table, key, queues, runtime variables) and ManageConnections on this stage. */
  #fargate(props: RealtimeStackProps): FargateRelay {
    const environment: Record<string, string> = {
      ...props.runtimeEnvironment,
      TABLE_NAME: props.table.tableName,
      CIPHER_KMS_KEY_ID: props.credentialsKey.keyArn,
    };
    if (props.logsQueue) environment[queueUrlVariable(LOGS_QUEUE)] = props.logsQueue.queueUrl;
    if (props.alertsQueue) environment[queueUrlVariable(ALERTS_QUEUE)] = props.alertsQueue.queueUrl;
    const relay = new FargateRelay(this, 'Relay', {
      api: this.api,
      connectionsEndpoint: `https://${this.api.apiId}.execute-api.${this.region}.${this.urlSuffix}/${STAGE_NAME}`,
      environment,
      ...(props.alarmTopic ? { alarmTopic: props.alarmTopic } : {}),
    });
    const role = relay.taskDefinition.taskRole;
    grantItemAccess(props.table, role);
    grantCredentialsKey(props.credentialsKey, role, CREDENTIALS_ENCRYPT_DECRYPT);
    props.logsQueue?.grantSendMessages(role);
    props.alertsQueue?.grantSendMessages(role);
    this.stage.grantManagementApiAccess(role);
    return relay;
  }

  #lambda(props: RealtimeStackProps): LambdaFunction {
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
    grantItemAccess(props.table, worker.fn);
    grantCredentialsKey(props.credentialsKey, worker.fn, CREDENTIALS_ENCRYPT_DECRYPT);
    return worker.fn;
  }

  /** Its own alarms, beside the monitoring stack's (which watches the REST API's and the workers' functions). */
  private alarms(fn: LambdaFunction, topic: ITopic): void {
    const period = ALARM_PERIOD;
    alarmOnAny(this, 'ErrorsRealtime', fn.metricErrors({ period, statistic: 'Sum' }), 'The realtime function failed (errors reported by Lambda)', topic);
    alarmOnAny(
      this,
      'ThrottlesRealtime',
      fn.metricThrottles({ period, statistic: 'Sum' }),
      'The realtime function was throttled (concurrency limit reached)',
      topic,
    );
  }

  private acknowledgeFindings(): void {
    const apiId = this.getLogicalId(this.api.node.defaultChild as CfnApi);
    const grantee = this.fn?.role ?? this.relay?.taskDefinition.taskRole;
    Validations.of(grantee!).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${apiId}>/${STAGE_NAME}/*/@connections/*]`,
      reason: 'Connection ids are assigned by API Gateway at run time; ManageConnections is limited to this API stage’s @connections.',
    });
    for (const route of this.node.findAll().filter((c) => c.node.id.endsWith('-Route') || c instanceof CfnRoute)) {
      Validations.of(route).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason:
          'The realtime relay authenticates $connect itself with the gateway key or JWT (header or subprotocol), exactly as the local upgrade; API Gateway authorizers cannot read those keys.',
      });
    }
    if (!this.fn) return;
    Validations.of(this.fn).acknowledge(
      { id: 'Serverless-LambdaDLQ', reason: 'Synchronous API Gateway WebSocket invocations only; errors are returned to API Gateway.' },
      {
        id: 'Serverless-LambdaAsyncFailureDestination',
        reason: 'Synchronous API Gateway WebSocket invocations only; there is no asynchronous failure to route.',
      },
    );
  }
}
