/**
 * The background half of rate limits and budgets (their counters live in the table): the `alerts`
 * queue with its dead-letter queue, the worker that mails usage limit alerts through SES, and the
 * EventBridge Scheduler schedule that runs the periodic usage resets.
 */
import { Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction, Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { Schedule, ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { ALERTS_QUEUE } from '../../layers/core/src/policy/limits/alerts.ts';
import { queueUrlVariable } from '../../layers/core/src/ports/queue-factory.ts';
import { WorkerFunction } from '../constructs/worker-function.ts';
import { DEFAULT_MEMORY_MB, type FunctionName } from '../settings.ts';
import { grantItemAccess } from './data-stack.ts';

export const ALERTS_WORKER_ENTRY = 'lambdas/workers/limits-alerts/handler.ts';
export const USAGE_RESET_ENTRY = 'lambdas/workers/usage-reset/handler.ts';

/** How often the reset job looks for due resets (usage itself restarts at the boundary anyway). */
export const USAGE_RESET_RATE = Duration.minutes(5);
/** Deliveries of an alert before it is parked in the dead-letter queue. */
export const ALERTS_MAX_RECEIVES = 5;

export interface LimitsStackProps extends StackProps {
  readonly table: ITable;
  /** The verified SES sender of alert e-mails (context `gantry:mailFrom`); without it nothing is mailed. */
  readonly mailFrom?: string;
  /** Memory (MB) by function (`limits-alerts`, `usage-reset`); defaults from infra/settings.ts. */
  readonly memoryMb?: Partial<Record<FunctionName, number>>;
}

export class LimitsStack extends Stack {
  readonly alerts: Queue;
  readonly alertsDeadLetters: Queue;
  readonly alertsWorker: LambdaFunction;
  readonly resetWorker: LambdaFunction;
  readonly resetDeadLetters: Queue;
  readonly resetSchedule: Schedule;

  constructor(scope: Construct, id: string, props: LimitsStackProps) {
    super(scope, id, props);
    const queueDefaults = { encryption: QueueEncryption.SQS_MANAGED, enforceSSL: true } as const;

    this.alertsDeadLetters = new Queue(this, 'AlertsDeadLetters', { ...queueDefaults, retentionPeriod: Duration.days(14) });
    Validations.of(this.alertsDeadLetters).acknowledge({ id: 'Serverless-SQSRedrivePolicy', reason: 'This is the dead-letter queue of the alerts queue.' });
    const alertsWorker = new WorkerFunction(this, 'AlertsWorker', {
      entry: ALERTS_WORKER_ENTRY,
      service: 'gantry-limits-alerts',
      timeout: Duration.seconds(60),
      memorySize: props.memoryMb?.['limits-alerts'] ?? DEFAULT_MEMORY_MB['limits-alerts'],
      environment: { TABLE_NAME: props.table.tableName, ...(props.mailFrom ? { MAIL_FROM: props.mailFrom } : {}) },
    });
    this.alertsWorker = alertsWorker.fn;
    this.alerts = new Queue(this, 'Alerts', {
      ...queueDefaults,
      // AWS's advice for Lambda sources: six times the function's timeout.
      visibilityTimeout: Duration.seconds(6 * 60),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.alertsDeadLetters, maxReceiveCount: ALERTS_MAX_RECEIVES },
    });
    const source = new SqsEventSource(this.alerts, { batchSize: 10, reportBatchItemFailures: true });
    this.alertsWorker.addEventSource(source);
    Validations.of(this.alertsWorker).acknowledge({
      id: 'Serverless-LambdaEventSourceMappingDestination',
      reason: 'SQS event sources take no on-failure destination; the queue’s redrive policy moves a failing message to its dead-letter queue.',
    });
    // Reads the policy, key or workspace an alert is about and the users to tell.
    grantItemAccess(props.table, this.alertsWorker);
    if (props.mailFrom) {
      const domain = props.mailFrom.slice(props.mailFrom.indexOf('@') + 1);
      this.alertsWorker.addToRolePolicy(
        new PolicyStatement({
          actions: ['ses:SendEmail'],
          resources: [
            this.formatArn({ service: 'ses', resource: 'identity', resourceName: props.mailFrom }),
            this.formatArn({ service: 'ses', resource: 'identity', resourceName: domain }),
          ],
        }),
      );
    }
    Validations.of(this.alertsWorker).acknowledge(
      { id: 'Serverless-LambdaDLQ', reason: 'Invoked by the SQS event source: a message that keeps failing moves to the alerts dead-letter queue.' },
      { id: 'Serverless-LambdaAsyncFailureDestination', reason: 'Invoked synchronously by the SQS event source mapping, never asynchronously.' },
    );

    this.resetDeadLetters = new Queue(this, 'ResetDeadLetters', { ...queueDefaults, retentionPeriod: Duration.days(14) });
    Validations.of(this.resetDeadLetters).acknowledge(
      { id: 'AwsSolutions-SQS3', reason: 'This is a dead-letter queue: of the reset schedule’s target and of the reset function’s failed invocations.' },
      { id: 'Serverless-SQSRedrivePolicy', reason: 'This is a dead-letter queue itself.' },
    );
    const resetWorker = new WorkerFunction(this, 'UsageResetWorker', {
      entry: USAGE_RESET_ENTRY,
      service: 'gantry-usage-reset',
      timeout: Duration.minutes(2),
      memorySize: props.memoryMb?.['usage-reset'] ?? DEFAULT_MEMORY_MB['usage-reset'],
      environment: { TABLE_NAME: props.table.tableName },
    });
    this.resetWorker = resetWorker.fn;
    grantItemAccess(props.table, this.resetWorker);
    // Scheduler invokes asynchronously: a run that fails after Lambda's retries is kept for inspection.
    this.resetWorker.configureAsyncInvoke({ onFailure: new SqsDestination(this.resetDeadLetters), retryAttempts: 2 });
    const schedulerRole = new Role(this, 'UsageResetSchedulerRole', { assumedBy: new ServicePrincipal('scheduler.amazonaws.com') });
    this.resetSchedule = new Schedule(this, 'UsageResetSchedule', {
      description: 'Gantry: records the periodic resets of usage limits that fell due',
      schedule: ScheduleExpression.rate(USAGE_RESET_RATE),
      target: new LambdaInvoke(this.resetWorker, {
        role: schedulerRole,
        retryAttempts: 2,
        maxEventAge: Duration.minutes(10),
        deadLetterQueue: this.resetDeadLetters,
      }),
    });
    const fnId = this.getLogicalId(this.resetWorker.node.defaultChild as CfnFunction);
    Validations.of(schedulerRole).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${fnId}.Arn>:*]`,
      reason: 'lambda:InvokeFunction on the reset function and its versions (the wildcard is the version qualifier); nothing else.',
    });
    Validations.of(this.resetWorker).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason: 'Failed asynchronous invocations go to the on-failure destination (the reset dead-letter queue), which supersedes a function DLQ.',
    });
  }

  /** Lets a function queue alerts: the send permission and `QUEUE_URL_ALERTS`. */
  allowAlertsFrom(fn: LambdaFunction & IGrantable): void {
    this.alerts.grantSendMessages(fn);
    fn.addEnvironment(queueUrlVariable(ALERTS_QUEUE), this.alerts.queueUrl);
  }
}
