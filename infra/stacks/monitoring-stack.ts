/**
 * Watching Gantry in CloudWatch: a dashboard of the gateway's own metrics (EMF, namespace
 * `Gantry`: requests, errors by status class, latency, time to first token, tokens, cost, cache
 * hits, limit refusals) beside Lambda, API Gateway, DynamoDB and SQS health; alarms on the 5xx
 * rate, p99 latency, throttling, dead-letter queues and log ingest lag; and an encrypted SNS topic
 * the alarms notify (subscribe an address with the context value `gantry:alarmEmail`).
 */
import { Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Queue, QueueEncryption, type IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { METRIC, METRICS_NAMESPACE } from '../../layers/core/src/observability/metrics-hook.ts';
import type { ApiStack } from './api-stack.ts';
import type { ObservabilityStack } from './observability-stack.ts';

/** The gateway function's POWERTOOLS_SERVICE_NAME: the `service` dimension of its metrics. */
export const GATEWAY_SERVICE = 'gantry-gateway';

export interface AlarmThresholds {
  /** Percent of gateway requests answered 5xx, over five minutes. */
  errorRatePercent: number;
  /** p99 of gateway request latency (ms; completions can be long), over five minutes. */
  p99LatencyMs: number;
  /** Age (s) of the oldest unprocessed log event. */
  ingestLagSeconds: number;
  /** API Gateway 5XX answers per five minutes (twice in a row) before the alarm fires. */
  apiServerErrors: number;
}

export const DEFAULT_THRESHOLDS: AlarmThresholds = { errorRatePercent: 5, p99LatencyMs: 60_000, ingestLagSeconds: 300, apiServerErrors: 5 };

interface AlarmWhen {
  comparison: ComparisonOperator;
  missing: TreatMissingData;
}

export interface WatchedQueue {
  readonly name: string;
  /** Absent for a dead-letter queue of a schedule or an asynchronous invocation (no source queue). */
  readonly queue?: IQueue;
  readonly deadLetters: IQueue;
}

export interface WatchedFunction {
  readonly name: string;
  readonly fn: IFunction;
  /** A scheduled function: no invocation for three of its periods means its schedule is broken. */
  readonly scheduledEvery?: Duration;
}

export interface MonitoringStackProps extends StackProps {
  readonly api: ApiStack;
  readonly table: ITable;
  readonly observability: ObservabilityStack;
  /** Further queues (with their dead-letter queues) and worker functions to watch. */
  readonly queues?: readonly WatchedQueue[];
  readonly functions?: readonly WatchedFunction[];
  readonly alarmEmail?: string;
  readonly thresholds?: Partial<AlarmThresholds>;
  /** The dashboard's name: the settings' prefix, so two deployments fit one account. */
  readonly dashboardName?: string;
}

const FIVE_MINUTES = Duration.minutes(5);

export class MonitoringStack extends Stack {
  readonly topic: Topic;
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringStackProps) {
    super(scope, id, props);
    const t = { ...DEFAULT_THRESHOLDS, ...props.thresholds };
    const obs = props.observability;
    // The gateway writes its metrics as EMF lines (the `metrics` gateway hook).
    props.api.gateway.addEnvironment('GW_EMF_METRICS', 'ON');

    const key = new Key(this, 'AlarmsKey', { description: 'Gantry: encrypts the alarm topic', enableKeyRotation: true });
    // CloudWatch publishes alarm notifications to the encrypted topic.
    key.addToResourcePolicy(
      new PolicyStatement({
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
      }),
    );
    this.topic = new Topic(this, 'Alarms', { displayName: 'Gantry alarms', masterKey: key, enforceSSL: true });
    if (props.alarmEmail) {
      // Notifications SNS could not deliver are kept, not dropped.
      const undelivered = new Queue(this, 'UndeliveredAlarms', {
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
      });
      Validations.of(undelivered).acknowledge(
        { id: 'AwsSolutions-SQS3', reason: 'This is the dead-letter queue of the alarm e-mail subscription.' },
        { id: 'Serverless-SQSRedrivePolicy', reason: 'This is a dead-letter queue itself.' },
      );
      this.topic.addSubscription(new EmailSubscription(props.alarmEmail, { deadLetterQueue: undelivered }));
    }
    const action = new SnsAction(this.topic);

    const gw = (name: string, statistic: string, dims: Record<string, string> = {}, label?: string) =>
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName: name,
        dimensionsMap: { service: GATEWAY_SERVICE, ...dims },
        statistic,
        period: FIVE_MINUTES,
        ...(label ? { label } : {}),
      });
    const requests = gw(METRIC.requests, 'Sum');
    const fivexx = gw(METRIC.requests, 'Sum', { statusClass: '5xx' });
    const errorRate = new MathExpression({
      expression: 'IF(requests > 0, 100 * fivexx / requests, 0)',
      usingMetrics: { requests, fivexx },
      label: '5xx rate (%)',
      period: FIVE_MINUTES,
    });

    const functions: WatchedFunction[] = [
      { name: 'gateway', fn: props.api.gateway },
      { name: 'admin', fn: props.api.admin },
      { name: 'log-ingest', fn: obs.ingestWorker },
      { name: 'log-export', fn: obs.exportWorker },
      ...(props.functions ?? []),
    ];
    const queues: WatchedQueue[] = [
      { name: 'logs', queue: obs.logs, deadLetters: obs.logsDeadLetters },
      { name: 'log-exports', queue: obs.exports, deadLetters: obs.exportsDeadLetters },
      ...(props.queues ?? []),
    ];

    const alarm = (
      id: string,
      metric: IMetric,
      threshold: number,
      description: string,
      evaluationPeriods = 1,
      datapointsToAlarm = evaluationPeriods,
      when: Partial<AlarmWhen> = {},
    ) => {
      const a = new Alarm(this, id, {
        alarmDescription: description,
        metric,
        threshold,
        evaluationPeriods,
        datapointsToAlarm,
        comparisonOperator: when.comparison ?? ComparisonOperator.GREATER_THAN_THRESHOLD,
        // No data is normal for error counts (nothing failed); where silence means broken the caller says so.
        treatMissingData: when.missing ?? TreatMissingData.NOT_BREACHING,
      });
      a.addAlarmAction(action);
      a.addOkAction(action);
      this.alarms.push(a);
      return a;
    };

    alarm('GatewayErrorRate', errorRate, t.errorRatePercent, `More than ${t.errorRatePercent}% of gateway requests answered 5xx`, 3, 2);
    alarm('GatewayLatencyP99', gw(METRIC.latency, 'p99'), t.p99LatencyMs, `Gateway p99 latency above ${t.p99LatencyMs} ms`, 3, 2);
    const throttles = Object.fromEntries(functions.map((f, i) => [`t${i}`, f.fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' })]));
    alarm(
      'LambdaThrottles',
      new MathExpression({ expression: Object.keys(throttles).join(' + '), usingMetrics: throttles, label: 'Lambda throttles', period: FIVE_MINUTES }),
      0,
      'A Gantry function was throttled (concurrency limit reached)',
    );
    const tableThrottles = new MathExpression({
      expression: 'reads + writes',
      usingMetrics: {
        reads: props.table.metric('ReadThrottleEvents', { statistic: 'Sum', period: FIVE_MINUTES }),
        writes: props.table.metric('WriteThrottleEvents', { statistic: 'Sum', period: FIVE_MINUTES }),
      },
      label: 'DynamoDB throttle events',
      period: FIVE_MINUTES,
    });
    alarm('TableThrottles', tableThrottles, 0, 'DynamoDB throttled reads or writes of the Gantry table');
    // Errors of every function, each on its own so the alarm names the function.
    for (const f of functions) {
      alarm(
        `Errors${pascal(f.name)}`,
        f.fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
        0,
        `The ${f.name} function failed (errors reported by Lambda)`,
      );
    }
    alarm(
      'ApiServerErrors',
      props.api.api.metricServerError({ period: FIVE_MINUTES, statistic: 'Sum' }),
      t.apiServerErrors,
      `API Gateway answered 5XX more than ${t.apiServerErrors} times in five minutes (integration failures and timeouts included)`,
      2,
      2,
    );
    // A schedule that stopped firing leaves no data at all: missing data is breaching here.
    for (const f of functions.filter((x) => x.scheduledEvery)) {
      const every = f.scheduledEvery!;
      alarm(
        `NotRunning${pascal(f.name)}`,
        f.fn.metricInvocations({ period: Duration.minutes(every.toMinutes() * 3), statistic: 'Sum' }),
        1,
        `The ${f.name} function was not invoked for three of its ${every.toMinutes()}-minute periods (its schedule is broken)`,
        1,
        1,
        { comparison: ComparisonOperator.LESS_THAN_THRESHOLD, missing: TreatMissingData.BREACHING },
      );
    }
    for (const q of queues) {
      alarm(
        `DeadLetters${pascal(q.name)}`,
        q.deadLetters.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: Duration.minutes(1) }),
        0,
        `Messages of the ${q.name} queue failed every delivery and wait in its dead-letter queue`,
      );
    }
    alarm(
      'LogIngestLag',
      obs.logs.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', period: Duration.minutes(1) }),
      t.ingestLagSeconds,
      `Log events wait more than ${t.ingestLagSeconds} s to be stored`,
      5,
      5,
    );

    this.dashboard = new Dashboard(this, 'Dashboard', { dashboardName: props.dashboardName ?? 'Gantry', defaultInterval: Duration.hours(3) });
    const graph = (title: string, left: IMetric[], right: IMetric[] = [], width = 8) => new GraphWidget({ title, left, right, width, height: 6 });
    const byClass = (name: string, statistic: string) => ['2xx', '4xx', '5xx'].map((c) => gw(name, statistic, { statusClass: c }, c));
    const perFunction = (title: string, metric: (f: IFunction) => IMetric) =>
      graph(
        title,
        functions.map((f) => metric(f.fn)),
      );
    const api = props.api.api;
    const sources = queues.flatMap((q) => (q.queue ? [{ name: q.name, queue: q.queue }] : []));

    this.dashboard.addWidgets(
      new TextWidget({ markdown: '# Gantry gateway\nEMF metrics of the gateway function (namespace `Gantry`).', width: 24, height: 1 }),
    );
    this.dashboard.addWidgets(
      graph('Requests by status class', byClass(METRIC.requests, 'Sum')),
      graph('5xx rate (%)', [errorRate]),
      graph(
        'Latency and time to first token (ms)',
        [gw(METRIC.latency, 'p50', {}, 'latency p50'), gw(METRIC.latency, 'p99', {}, 'latency p99')],
        [gw(METRIC.timeToFirstToken, 'p50', {}, 'TTFT p50'), gw(METRIC.timeToFirstToken, 'p99', {}, 'TTFT p99')],
      ),
    );
    this.dashboard.addWidgets(
      graph('Tokens', [gw(METRIC.inputTokens, 'Sum', {}, 'input'), gw(METRIC.outputTokens, 'Sum', {}, 'output')], [gw(METRIC.totalTokens, 'Sum', {}, 'total')]),
      graph('Cost (USD)', [gw(METRIC.cost, 'Sum', {}, 'cost')]),
      graph('Cache hits and limit refusals', [gw(METRIC.cacheHits, 'Sum', {}, 'cache hits'), gw(METRIC.limitRefusals, 'Sum', {}, 'limit refusals')]),
    );
    this.dashboard.addWidgets(new TextWidget({ markdown: '# AWS services', width: 24, height: 1 }));
    this.dashboard.addWidgets(
      perFunction('Lambda invocations', (fn) => fn.metricInvocations({ period: FIVE_MINUTES })),
      perFunction('Lambda errors', (fn) => fn.metricErrors({ period: FIVE_MINUTES })),
      perFunction('Lambda throttles', (fn) => fn.metricThrottles({ period: FIVE_MINUTES })),
    );
    this.dashboard.addWidgets(
      perFunction('Lambda duration p99 (ms)', (fn) => fn.metricDuration({ period: FIVE_MINUTES, statistic: 'p99' })),
      perFunction('Lambda concurrent executions', (fn) => fn.metric('ConcurrentExecutions', { period: FIVE_MINUTES, statistic: 'Maximum' })),
      graph(
        'API Gateway requests and errors',
        [api.metricCount({ period: FIVE_MINUTES })],
        [api.metricClientError({ period: FIVE_MINUTES }), api.metricServerError({ period: FIVE_MINUTES })],
      ),
    );
    this.dashboard.addWidgets(
      graph('API Gateway latency p99 (ms)', [
        api.metricLatency({ period: FIVE_MINUTES, statistic: 'p99' }),
        api.metricIntegrationLatency({ period: FIVE_MINUTES, statistic: 'p99' }),
      ]),
      graph('DynamoDB capacity consumed', [
        props.table.metricConsumedReadCapacityUnits({ period: FIVE_MINUTES }),
        props.table.metricConsumedWriteCapacityUnits({ period: FIVE_MINUTES }),
      ]),
      graph('DynamoDB throttle events', [tableThrottles]),
    );
    this.dashboard.addWidgets(
      graph(
        'SQS messages waiting',
        sources.map((q) => q.queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), label: q.name })),
      ),
      graph(
        'SQS age of oldest message (s)',
        sources.map((q) => q.queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), label: q.name })),
      ),
      graph(
        'Dead-letter queues',
        queues.map((q) => q.deadLetters.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), label: q.name })),
      ),
    );
    this.dashboard.addWidgets(new AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 4 }));
  }
}

const pascal = (s: string) => s.replace(/(^|[-_ ])(\w)/g, (_, __, c: string) => c.toUpperCase());
