/**
 * Identity and access in the background: the key lifecycle worker (expiry, rotation policies,
 * usage resets, key e-mails) run by an EventBridge Scheduler schedule, and the admin function's
 * permission to e-mail invites and rotation notices through SES.
 */
import { Aws, Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction, Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { Schedule, ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { Bootstrap } from '../constructs/bootstrap.ts';
import { DEFAULT_MEMORY_MB, type FunctionName } from '../settings.ts';
import { WorkerFunction } from '../constructs/worker-function.ts';
import { STAGE_NAME, type ApiStack } from './api-stack.ts';
import { grantItemAccess } from './data-stack.ts';

export const KEY_LIFECYCLE_ENTRY = 'lambdas/workers/key-lifecycle/handler.ts';

/** How often expiries, rotations and key usage resets are looked for. */
export const KEY_LIFECYCLE_RATE = Duration.minutes(5);

export interface IdentityStackProps extends StackProps {
  readonly table: ITable;
  /** The admin function sends invites and rotation notices; it gets the sender and the invite link base. */
  readonly api: ApiStack;
  /** The verified SES sender (context `gantry:mailFrom`); without it nothing is mailed. */
  readonly mailFrom?: string;
  /** Memory (MB) by function (`key-lifecycle`, `bootstrap`); defaults from infra/settings.ts. */
  readonly memoryMb?: Partial<Record<FunctionName, number>>;
  /** The base of invite links; the API's own URL when absent. */
  readonly publicUrl?: string;
}

/** Lets a function send from the verified sender (the address or its domain identity). */
export function grantSendMail(fn: LambdaFunction, mailFrom: string): void {
  const stack = Stack.of(fn);
  const domain = mailFrom.slice(mailFrom.indexOf('@') + 1);
  fn.addToRolePolicy(
    new PolicyStatement({
      actions: ['ses:SendEmail'],
      resources: [
        stack.formatArn({ service: 'ses', resource: 'identity', resourceName: mailFrom }),
        stack.formatArn({ service: 'ses', resource: 'identity', resourceName: domain }),
      ],
    }),
  );
  fn.addEnvironment('MAIL_FROM', mailFrom);
}

export class IdentityStack extends Stack {
  readonly lifecycleWorker: LambdaFunction;
  readonly lifecycleDeadLetters: Queue;
  readonly lifecycleSchedule: Schedule;
  /** The first deployment's organisation and owner key (kept in a secret). */
  readonly bootstrap: Bootstrap;

  constructor(scope: Construct, id: string, props: IdentityStackProps) {
    super(scope, id, props);

    this.lifecycleDeadLetters = new Queue(this, 'KeyLifecycleDeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.lifecycleDeadLetters).acknowledge(
      { id: 'AwsSolutions-SQS3', reason: 'This is a dead-letter queue: of the lifecycle schedule’s target and of the worker’s failed invocations.' },
      { id: 'Serverless-SQSRedrivePolicy', reason: 'This is a dead-letter queue itself.' },
    );

    const worker = new WorkerFunction(this, 'KeyLifecycleWorker', {
      entry: KEY_LIFECYCLE_ENTRY,
      service: 'gantry-key-lifecycle',
      timeout: Duration.minutes(5),
      memorySize: props.memoryMb?.['key-lifecycle'] ?? DEFAULT_MEMORY_MB['key-lifecycle'],
      environment: { TABLE_NAME: props.table.tableName },
    });
    this.lifecycleWorker = worker.fn;
    // Reads and writes keys (and their hash copies), users for recipients, audit entries.
    grantItemAccess(props.table, this.lifecycleWorker);
    if (props.mailFrom) grantSendMail(this.lifecycleWorker, props.mailFrom);
    this.lifecycleWorker.configureAsyncInvoke({ onFailure: new SqsDestination(this.lifecycleDeadLetters), retryAttempts: 2 });

    const schedulerRole = new Role(this, 'KeyLifecycleSchedulerRole', { assumedBy: new ServicePrincipal('scheduler.amazonaws.com') });
    this.lifecycleSchedule = new Schedule(this, 'KeyLifecycleSchedule', {
      description: 'Gantry: expires API keys, runs rotation policies and key usage resets, sends key e-mails',
      schedule: ScheduleExpression.rate(KEY_LIFECYCLE_RATE),
      target: new LambdaInvoke(this.lifecycleWorker, {
        role: schedulerRole,
        retryAttempts: 2,
        maxEventAge: Duration.minutes(10),
        deadLetterQueue: this.lifecycleDeadLetters,
      }),
    });
    const fnId = this.getLogicalId(this.lifecycleWorker.node.defaultChild as CfnFunction);
    Validations.of(schedulerRole).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${fnId}.Arn>:*]`,
      reason: 'lambda:InvokeFunction on the lifecycle function and its versions (the wildcard is the version qualifier); nothing else.',
    });
    Validations.of(this.lifecycleWorker).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason: 'Failed asynchronous invocations go to the on-failure destination (the lifecycle dead-letter queue), which supersedes a function DLQ.',
    });

    this.bootstrap = new Bootstrap(this, 'Bootstrap', { table: props.table, memorySize: props.memoryMb?.bootstrap ?? DEFAULT_MEMORY_MB.bootstrap });

    // Invite links point at the API's own URL (the stage is not in the path the function sees).
    const apiUrl = `https://${props.api.api.restApiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}/${STAGE_NAME}`;
    props.api.admin.addEnvironment('GW_PUBLIC_URL', props.publicUrl ?? apiUrl);
    if (props.mailFrom) grantSendMail(props.api.admin, props.mailFrom);
  }
}
