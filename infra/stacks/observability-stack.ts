/**
 * Request logs in the background: the `logs` queue (log events from the gateway, custom logs from
 * the admin API) consumed in batches by the log-ingest worker, and the `log-exports` queue run by
 * the log-export worker. Each queue has a dead-letter queue: a message that keeps failing is kept
 * there, not lost. Log bodies and export files in the blob bucket expire on their own.
 */
import { Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { EXPORTS_QUEUE, LOGS_QUEUE } from '../../layers/core/src/observability/messages.ts';
import { queueUrlVariable } from '../../layers/core/src/ports/queue-factory.ts';
import { WorkerFunction } from '../constructs/worker-function.ts';
import { DEFAULT_MEMORY_MB, type FunctionName } from '../settings.ts';
import { grantItemAccess, grantObjectAccess } from './data-stack.ts';

export const LOG_INGEST_ENTRY = 'lambdas/workers/log-ingest/handler.ts';
export const LOG_EXPORT_ENTRY = 'lambdas/workers/log-export/handler.ts';

/** Deliveries of a message before it is kept in its dead-letter queue. */
export const LOGS_MAX_RECEIVES = 5;
export const EXPORTS_MAX_RECEIVES = 3;
/**
 * Messages per ingest invocation: the most SQS hands a function with a batching window, so a batch
 * is bounded by the window and by Lambda's 6 MB payload (about 3,000 events) instead. Larger
 * batches share more rollup updates and one batch marker (observability/ingest.ts).
 */
export const INGEST_BATCH_SIZE = 10_000;
/** How long SQS gathers messages for an invocation: a log is listed within about this much. */
export const INGEST_BATCHING_WINDOW_SECONDS = 2;
/** Ingest invocations at once: bounds the write rate on the hottest rollup items. */
export const INGEST_MAX_CONCURRENCY = 5;
/** Days log bodies and export files are kept in the bucket (LOG_RETENTION_DISPLAY's default, plus a day). */
export const LOG_OBJECT_DAYS = 91;

export interface ObservabilityStackProps extends StackProps {
  readonly table: ITable;
  readonly blobs: Bucket;
  /** Memory (MB) by function (`log-ingest`, `log-export`); defaults from infra/settings.ts. */
  readonly memoryMb?: Partial<Record<FunctionName, number>>;
}

export class ObservabilityStack extends Stack {
  readonly logs: Queue;
  readonly logsDeadLetters: Queue;
  readonly ingestWorker: LambdaFunction;
  readonly exports: Queue;
  readonly exportsDeadLetters: Queue;
  readonly exportWorker: LambdaFunction;

  constructor(scope: Construct, id: string, props: ObservabilityStackProps) {
    super(scope, id, props);
    const queueDefaults = { encryption: QueueEncryption.SQS_MANAGED, enforceSSL: true } as const;
    const deadLetters = (name: string, of: string) => {
      const q = new Queue(this, name, { ...queueDefaults, retentionPeriod: Duration.days(14) });
      Validations.of(q).acknowledge({ id: 'Serverless-SQSRedrivePolicy', reason: `This is the dead-letter queue of the ${of} queue.` });
      return q;
    };
    const workerAcks = (fn: LambdaFunction, queue: string) =>
      Validations.of(fn).acknowledge(
        { id: 'Serverless-LambdaDLQ', reason: `Invoked by the SQS event source: a message that keeps failing moves to the ${queue} dead-letter queue.` },
        { id: 'Serverless-LambdaAsyncFailureDestination', reason: 'Invoked synchronously by the SQS event source mapping, never asynchronously.' },
        {
          id: 'Serverless-LambdaEventSourceMappingDestination',
          reason: 'SQS event sources take no on-failure destination; the queue’s redrive policy moves a failing message to its dead-letter queue.',
        },
      );

    // Log ingest.
    this.logsDeadLetters = deadLetters('LogsDeadLetters', 'logs');
    const ingest = new WorkerFunction(this, 'LogIngestWorker', {
      entry: LOG_INGEST_ENTRY,
      service: 'gantry-log-ingest',
      timeout: Duration.seconds(60),
      memorySize: props.memoryMb?.['log-ingest'] ?? DEFAULT_MEMORY_MB['log-ingest'],
      environment: { TABLE_NAME: props.table.tableName },
    });
    this.ingestWorker = ingest.fn;
    this.logs = new Queue(this, 'Logs', {
      ...queueDefaults,
      // AWS's advice for Lambda sources: six times the function's timeout.
      visibilityTimeout: Duration.seconds(6 * 60),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.logsDeadLetters, maxReceiveCount: LOGS_MAX_RECEIVES },
    });
    this.ingestWorker.addEventSource(
      new SqsEventSource(this.logs, {
        batchSize: INGEST_BATCH_SIZE,
        maxBatchingWindow: Duration.seconds(INGEST_BATCHING_WINDOW_SECONDS),
        maxConcurrency: INGEST_MAX_CONCURRENCY,
        reportBatchItemFailures: true,
      }),
    );
    // Writes log items, batch markers and rollups; sends failed rollup updates back to its own queue.
    grantItemAccess(props.table, this.ingestWorker);
    this.allowLogsFrom(this.ingestWorker);
    workerAcks(this.ingestWorker, 'logs');

    // Log exports.
    this.exportsDeadLetters = deadLetters('LogExportsDeadLetters', 'log exports');
    const exporter = new WorkerFunction(this, 'LogExportWorker', {
      entry: LOG_EXPORT_ENTRY,
      service: 'gantry-log-export',
      timeout: Duration.minutes(15),
      memorySize: props.memoryMb?.['log-export'] ?? DEFAULT_MEMORY_MB['log-export'],
      environment: { TABLE_NAME: props.table.tableName, BLOB_BUCKET: props.blobs.bucketName },
    });
    this.exportWorker = exporter.fn;
    this.exports = new Queue(this, 'LogExports', {
      ...queueDefaults,
      // At least the function's timeout: a run is never delivered twice at once.
      visibilityTimeout: Duration.minutes(16),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.exportsDeadLetters, maxReceiveCount: EXPORTS_MAX_RECEIVES },
    });
    this.exportWorker.addEventSource(new SqsEventSource(this.exports, { batchSize: 1, reportBatchItemFailures: true }));
    grantItemAccess(props.table, this.exportWorker);
    grantObjectAccess(props.blobs, this.exportWorker);
    // The parts of an export are one multipart upload, aborted when the export is cancelled.
    this.exportWorker.addToRolePolicy(new PolicyStatement({ actions: ['s3:AbortMultipartUpload'], resources: [props.blobs.arnForObjects('exports/*')] }));
    this.allowExportsFrom(this.exportWorker);
    workerAcks(this.exportWorker, 'log exports');
    Validations.of(this.exportWorker.role!).acknowledge(
      {
        id: `AwsSolutions-IAM5[Resource::${Stack.of(props.blobs).stackName}:ExportsOutputFnGetAttBlobsF0F01DC6Arn220BCD82/exports/*]`,
        reason: 'Export files are named by export id at run time; only multipart aborts, only under exports/.',
      },
      {
        id: `AwsSolutions-IAM5[Resource::${Stack.of(props.blobs).stackName}:ExportsOutputFnGetAttBlobsF0F01DC6Arn220BCD82/*]`,
        reason: 'Export files and log bodies are named by id at run time; access is get, put and delete of objects in the one bucket.',
      },
    );

    props.blobs.addLifecycleRule({ id: 'expire-log-bodies', prefix: 'logs/', expiration: Duration.days(LOG_OBJECT_DAYS) });
    props.blobs.addLifecycleRule({ id: 'expire-log-exports', prefix: 'exports/', expiration: Duration.days(LOG_OBJECT_DAYS) });
  }

  /** Lets a function send log events: the send permission and `QUEUE_URL_LOGS`. */
  allowLogsFrom(fn: LambdaFunction & IGrantable): void {
    this.logs.grantSendMessages(fn);
    fn.addEnvironment(queueUrlVariable(LOGS_QUEUE), this.logs.queueUrl);
  }

  /** Lets a function start exports: the send permission and `QUEUE_URL_LOG_EXPORTS`. */
  allowExportsFrom(fn: LambdaFunction & IGrantable): void {
    this.exports.grantSendMessages(fn);
    fn.addEnvironment(queueUrlVariable(EXPORTS_QUEUE), this.exports.queueUrl);
  }
}
