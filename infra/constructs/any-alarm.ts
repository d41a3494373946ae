/**
 * An alarm on any occurrence in five minutes (a failed invocation, a throttle, a failed execution),
 * notifying the alarm topic when it fires and when it clears. For stacks that watch their own
 * resources beside the monitoring stack (realtime, batches, mcp).
 */
import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';

export const ALARM_PERIOD = Duration.minutes(5);

export function alarmOnAny(scope: Construct, id: string, metric: IMetric, description: string, topic: ITopic): Alarm {
  const alarm = new Alarm(scope, id, {
    metric,
    threshold: 0,
    evaluationPeriods: 1,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
    treatMissingData: TreatMissingData.NOT_BREACHING,
    alarmDescription: description,
  });
  const action = new SnsAction(topic);
  alarm.addAlarmAction(action);
  alarm.addOkAction(action);
  return alarm;
}
