/** The limits alerts worker: usage limit alerts from the `alerts` SQS queue, mailed through SES. */
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import type { UsageAlert } from '../../../layers/core/src/policy/limits/alerts.ts';
import { alertsConsumer } from '../../../layers/core/src/policy/limits/workers.ts';
import { depsFromEnv } from '../../shared/deps.ts';
import { createSqsHandler } from '../../shared/sqs-consumer.ts';

export function createLimitsAlertsHandler(getDeps: () => Promise<CoreDeps>) {
  return createSqsHandler<UsageAlert>(async () => alertsConsumer(await getDeps()));
}

export const handler = createLimitsAlertsHandler(depsFromEnv);
