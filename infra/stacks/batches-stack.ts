/**
 * Gateway-run batches on AWS: a Step Functions state machine driving the batch function (the
 * engine in batches/engine.ts through batches/steps.ts):
 *
 *   Start -> (in_progress?) -> Chunks (inline Map over the chunks, MaxConcurrency) -> Finalize
 *
 * A chunk whose lines were answered 429 is retried with exponential backoff (the engine's AIMD has
 * already narrowed its window); Lambda's own transient errors are retried too; any other failure
 * goes to MarkFailed, which marks the batch failed with the reason. The execution is named after
 * the batch, so a second start of the same batch is refused (idempotent). Its own stack: it
 * depends on the data and observability stacks only, and the REST API reads its ARN.
 *
 * Why an inline Map and not a Distributed Map: the state carries only chunk bounds (1,000 lines
 * each, 50 for OpenAI's 50,000-line maximum), well under the 256 KB state limit, and lines are
 * read from the blob store by the engine itself; no child executions, S3 reader or result writer
 * to pay for and grant.
 */
import { Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { CfnFunction, Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import {
  Choice,
  Condition,
  DefinitionBody,
  Fail,
  JsonPath,
  LogLevel,
  Map as MapState,
  StateMachine,
  StateMachineType,
  Succeed,
  TaskInput,
} from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct } from 'constructs';
import { BATCH_THROTTLED } from '../../layers/core/src/batches/steps.ts';
import { alarmOnAny, ALARM_PERIOD } from '../constructs/any-alarm.ts';
import { WorkerFunction } from '../constructs/worker-function.ts';
import { CREDENTIALS_DECRYPT, grantCredentialsKey, grantItemAccess, grantObjectAccess } from './data-stack.ts';

export const BATCH_ENTRY = 'lambdas/workers/batch/handler.ts';

/** Chunks of one batch running at once (each runs its lines with AIMD up to BATCH_LINE_CONCURRENCY). */
export const BATCH_CHUNK_CONCURRENCY = 4;
/** The engine's window per chunk never grows past this: with the Map's, the per-batch cap is their product. */
export const BATCH_LINE_CONCURRENCY = 64;
/** A throttled chunk is retried this many times, waiting 5 s, 10 s, 20 s ... (at most 5 minutes). */
export const BATCH_THROTTLE_RETRIES = 8;
/** How Step Functions names a Lambda invocation that died unhandled (timeouts, out of memory). */
export const CHUNK_DIED = ['Lambda.Unknown', 'Sandbox.Timedout'] as const;
/** A chunk whose function died runs again this many times. */
export const BATCH_CHUNK_RERUNS = 2;

export interface BatchesStackProps extends StackProps {
  readonly table: ITable;
  readonly blobs: IBucket;
  readonly credentialsKey: IKey;
  readonly memoryMb?: number;
  readonly alarmTopic?: ITopic;
  /** The state machine's name: the REST API builds its ARN from it (no cross-stack reference). */
  readonly stateMachineName: string;
}

export class BatchesStack extends Stack {
  readonly fn: LambdaFunction;
  readonly stateMachine: StateMachine;
  readonly stateMachineName: string;

  constructor(scope: Construct, id: string, props: BatchesStackProps) {
    super(scope, id, props);
    const worker = new WorkerFunction(this, 'BatchWorker', {
      entry: BATCH_ENTRY,
      service: 'gantry-batch',
      // A chunk of 1,000 lines against a slow provider; the state machine retries what is left.
      timeout: Duration.minutes(15),
      memorySize: props.memoryMb ?? 512,
      environment: { TABLE_NAME: props.table.tableName, BLOB_BUCKET: props.blobs.bucketName, CIPHER_KMS_KEY_ID: props.credentialsKey.keyArn },
    });
    this.fn = worker.fn;
    grantItemAccess(props.table, this.fn);
    grantObjectAccess(props.blobs, this.fn);
    grantCredentialsKey(props.credentialsKey, this.fn, CREDENTIALS_DECRYPT);

    this.stateMachineName = props.stateMachineName;
    const logs = new LogGroup(this, 'StateMachineLogs', { retention: RetentionDays.ONE_MONTH });
    this.stateMachine = new StateMachine(this, 'BatchStateMachine', {
      stateMachineName: props.stateMachineName,
      stateMachineType: StateMachineType.STANDARD,
      definitionBody: DefinitionBody.fromChainable(this.definition()),
      // completion_window is 24 h; an execution outliving it has nothing left to do.
      timeout: Duration.hours(25),
      tracingEnabled: true,
      // Every event, without the states' input and output (headers and bodies stay out of the logs).
      logs: { destination: logs, level: LogLevel.ALL, includeExecutionData: false },
    });
    if (props.alarmTopic) this.alarms(props.alarmTopic);
    this.acknowledgeFindings(props.blobs);
  }

  private step(id: string, payload: Record<string, unknown>, resultSelector?: Record<string, unknown>): LambdaInvoke {
    const task = new LambdaInvoke(this, id, {
      lambdaFunction: this.fn,
      payload: TaskInput.fromObject(payload),
      ...(resultSelector ? { resultSelector, resultPath: `$.${id.toLowerCase()}` } : { resultPath: JsonPath.DISCARD }),
      // Lambda's transient errors (throttling, service errors) are retried with its defaults.
      retryOnServiceExceptions: true,
    });
    return task;
  }

  private definition() {
    const batchId = JsonPath.stringAt('$.batchId');
    const start = this.step(
      'Start',
      { action: 'start', batchId },
      { status: JsonPath.stringAt('$.Payload.status'), chunks: JsonPath.objectAt('$.Payload.chunks') },
    );
    const chunk = this.step('RunChunk', { action: 'chunk', batchId, chunk: JsonPath.objectAt('$.chunk'), maxConcurrency: BATCH_LINE_CONCURRENCY });
    chunk.addRetry({
      errors: [BATCH_THROTTLED],
      interval: Duration.seconds(5),
      backoffRate: 2,
      maxAttempts: BATCH_THROTTLE_RETRIES,
      maxDelay: Duration.minutes(5),
    });
    // A chunk whose function died (a timeout, out of memory) runs again: the engine runs the lines
    // it left in flight once more and the rest not at all (docs/batches.md#exactly-once).
    chunk.addRetry({ errors: [...CHUNK_DIED], interval: Duration.seconds(5), maxAttempts: BATCH_CHUNK_RERUNS });
    const chunks = new MapState(this, 'Chunks', {
      itemsPath: '$.start.chunks',
      maxConcurrency: BATCH_CHUNK_CONCURRENCY,
      itemSelector: { batchId, chunk: JsonPath.objectAt('$$.Map.Item.Value') },
      resultPath: JsonPath.DISCARD,
    });
    chunks.itemProcessor(chunk);
    const finalize = this.step('Finalize', { action: 'finalize', batchId });
    const markFailed = this.step('MarkFailed', { action: 'fail', batchId, error: JsonPath.objectAt('$.error') });
    const failed = new Fail(this, 'BatchFailed', { error: 'BatchFailed', cause: 'A step of the batch failed; the batch is marked failed' });
    const done = new Succeed(this, 'Done');
    const catchAll = { errors: ['States.ALL'], resultPath: '$.error' };
    for (const s of [start, chunks, finalize]) s.addCatch(markFailed, catchAll);
    markFailed.next(failed);
    return start.next(
      new Choice(this, 'Validated')
        .when(Condition.stringEquals('$.start.status', 'in_progress'), chunks.next(finalize).next(done))
        // Failed validation (every bad line reported) or cancelled before a line ran: nothing to map.
        .when(Condition.stringEquals('$.start.status', 'failed'), done)
        .otherwise(finalize),
    );
  }

  private alarms(topic: ITopic): void {
    const period = ALARM_PERIOD;
    alarmOnAny(
      this,
      'BatchExecutionsFailed',
      this.stateMachine.metricFailed({ period, statistic: 'Sum' }),
      'A batch execution failed (its batch was marked failed)',
      topic,
    );
    alarmOnAny(this, 'BatchExecutionsTimedOut', this.stateMachine.metricTimedOut({ period, statistic: 'Sum' }), 'A batch execution timed out', topic);
    alarmOnAny(this, 'ErrorsBatch', this.fn.metricErrors({ period, statistic: 'Sum' }), 'The batch function failed (errors reported by Lambda)', topic);
  }

  private acknowledgeFindings(blobs: IBucket): void {
    const fnId = this.getLogicalId(this.fn.node.defaultChild as CfnFunction);
    Validations.of(this.stateMachine.role).acknowledge(
      {
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'X-Ray tracing and CloudWatch Logs log delivery (logs:CreateLogDelivery ...) do not support resource-level permissions.',
      },
      {
        id: `AwsSolutions-IAM5[Resource::<${fnId}.Arn>:*]`,
        reason: 'lambda:InvokeFunction on the batch function and its versions (the wildcard is the version qualifier); nothing else.',
      },
    );
    Validations.of(this.fn.role!).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${Stack.of(blobs).stackName}:ExportsOutputFnGetAttBlobsF0F01DC6Arn220BCD82/*]`,
      reason: 'Batch input, output and error files have keys generated at run time (files/<workspace>/<id>); access is limited to objects in the one bucket.',
    });
    Validations.of(this.fn).acknowledge(
      {
        id: 'Serverless-LambdaDLQ',
        reason: 'Invoked synchronously by Step Functions only: a failure goes to the state machine’s catch path, which marks the batch failed.',
      },
      { id: 'Serverless-LambdaAsyncFailureDestination', reason: 'Invoked synchronously by Step Functions, never asynchronously.' },
    );
  }
}
