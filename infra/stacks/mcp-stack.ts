/**
 * MCP in the background: the `mcp-sync` queue (integration created or changed in the admin API)
 * run by the mcp-sync worker, which connects to the integration's MCP server and stores its
 * metadata and capabilities (docs/mcp.md, "Discovery"). The worker runs outside any VPC, so it
 * reaches the public MCP servers as the gateway does; the SSRF guard of the code applies.
 *
 * The API stack does not depend on this stack, so that this one may notify the monitoring stack's
 * topic (the monitoring stack watches the API) without a cycle: the admin function's queue URL is
 * written from the queue's fixed name, and its send permission is a policy of this stack attached
 * to the admin function's role.
 */
import { Aws, Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { MCP_SYNC_QUEUE } from '../../layers/core/src/mcp/messages.ts';
import { queueUrlVariable } from '../../layers/core/src/ports/queue-factory.ts';
import { alarmOnAny, ALARM_PERIOD } from '../constructs/any-alarm.ts';
import { WorkerFunction } from '../constructs/worker-function.ts';
import { DEFAULT_MEMORY_MB } from '../settings.ts';
import { CREDENTIALS_DECRYPT, grantCredentialsKey, grantItemAccess } from './data-stack.ts';

export const MCP_SYNC_ENTRY = 'lambdas/workers/mcp-sync/handler.ts';

/** Deliveries of a sync message before it is kept in the dead-letter queue. */
export const MCP_SYNC_MAX_RECEIVES = 3;
/** Syncs per invocation: each may take the 15 s discovery timeout, one after the other. */
export const MCP_SYNC_BATCH_SIZE = 5;
/** Above MCP_SYNC_BATCH_SIZE discovery timeouts, with room for the table writes. */
export const MCP_SYNC_TIMEOUT = Duration.minutes(2);

export interface McpStackProps extends StackProps {
  readonly table: ITable;
  /** Decrypts the integrations' static headers sent to their servers. */
  readonly credentialsKey: IKey;
  /** The queue's name, unique in the account and region (`<prefix>-mcp-sync`). */
  readonly syncQueueName: string;
  readonly memoryMb?: number;
  /** Where its alarms notify (the monitoring stack's topic). */
  readonly alarmTopic?: ITopic;
}

export class McpStack extends Stack {
  readonly syncQueue: Queue;
  readonly syncDeadLetters: Queue;
  readonly syncWorker: LambdaFunction;
  readonly #queueName: string;

  constructor(scope: Construct, id: string, props: McpStackProps) {
    super(scope, id, props);
    this.#queueName = props.syncQueueName;
    const encrypted = { encryption: QueueEncryption.SQS_MANAGED, enforceSSL: true } as const;
    this.syncDeadLetters = new Queue(this, 'McpSyncDeadLetters', { ...encrypted, retentionPeriod: Duration.days(14) });
    Validations.of(this.syncDeadLetters).acknowledge({ id: 'Serverless-SQSRedrivePolicy', reason: 'This is the dead-letter queue of the mcp-sync queue.' });

    const worker = new WorkerFunction(this, 'McpSyncWorker', {
      entry: MCP_SYNC_ENTRY,
      service: 'gantry-mcp-sync',
      timeout: MCP_SYNC_TIMEOUT,
      memorySize: props.memoryMb ?? DEFAULT_MEMORY_MB['mcp-sync'],
      environment: { TABLE_NAME: props.table.tableName, CIPHER_KMS_KEY_ID: props.credentialsKey.keyArn },
    });
    this.syncWorker = worker.fn;
    this.syncQueue = new Queue(this, 'McpSync', {
      ...encrypted,
      queueName: props.syncQueueName,
      // AWS's advice for Lambda sources: six times the function's timeout.
      visibilityTimeout: Duration.seconds(6 * MCP_SYNC_TIMEOUT.toSeconds()),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.syncDeadLetters, maxReceiveCount: MCP_SYNC_MAX_RECEIVES },
    });
    this.syncWorker.addEventSource(new SqsEventSource(this.syncQueue, { batchSize: MCP_SYNC_BATCH_SIZE, reportBatchItemFailures: true }));
    // Reads integrations, writes their metadata and capabilities; opens (never seals) their headers.
    grantItemAccess(props.table, this.syncWorker);
    grantCredentialsKey(props.credentialsKey, this.syncWorker, CREDENTIALS_DECRYPT);
    Validations.of(this.syncWorker).acknowledge(
      { id: 'Serverless-LambdaDLQ', reason: 'Invoked by the SQS event source: a message that keeps failing moves to the mcp-sync dead-letter queue.' },
      { id: 'Serverless-LambdaAsyncFailureDestination', reason: 'Invoked synchronously by the SQS event source mapping, never asynchronously.' },
      {
        id: 'Serverless-LambdaEventSourceMappingDestination',
        reason: 'SQS event sources take no on-failure destination; the queue’s redrive policy moves a failing message to its dead-letter queue.',
      },
    );
    if (props.alarmTopic) this.alarms(props.alarmTopic);
  }

  /**
   * Lets a function queue syncs: `sqs:SendMessage` on the queue only (a policy of this stack on the
   * function's role) and `QUEUE_URL_MCP_SYNC`, written from the queue's name so that the
   * function's stack holds no reference to this one.
   */
  allowSyncFrom(id: string, fn: LambdaFunction): void {
    if (!fn.role) throw new Error(`${fn.node.path} has no role to grant mcp-sync sends to`);
    new Policy(this, `${id}SendsSyncs`, {
      roles: [fn.role],
      statements: [new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.syncQueue.queueArn] })],
    });
    fn.addEnvironment(queueUrlVariable(MCP_SYNC_QUEUE), `https://sqs.${Aws.REGION}.${Aws.URL_SUFFIX}/${Aws.ACCOUNT_ID}/${this.#queueName}`);
  }

  /** Its own alarms, beside the monitoring stack's (which watches the API and the other workers). */
  private alarms(topic: ITopic): void {
    const period = ALARM_PERIOD;
    alarmOnAny(
      this,
      'DeadLettersMcpSync',
      this.syncDeadLetters.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: Duration.minutes(1) }),
      'Messages of the mcp-sync queue failed every delivery and wait in its dead-letter queue',
      topic,
    );
    alarmOnAny(
      this,
      'ErrorsMcpSync',
      this.syncWorker.metricErrors({ period, statistic: 'Sum' }),
      'The mcp-sync function failed (errors reported by Lambda)',
      topic,
    );
    alarmOnAny(
      this,
      'ThrottlesMcpSync',
      this.syncWorker.metricThrottles({ period, statistic: 'Sum' }),
      'The mcp-sync function was throttled (concurrency limit reached)',
      topic,
    );
  }
}
