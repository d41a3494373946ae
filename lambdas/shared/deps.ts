/**
 * The composition root of a Lambda container: the configuration from the environment, the AWS
 * adapters, and the core's dependencies built from them once, on the first invocation.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { loadConfig } from '../../layers/core/src/config.ts';
import { createDeps, type CoreDeps } from '../../layers/core/src/deps.ts';
import { awsAdapters } from '../../layers/core/src/ports/aws/adapters.ts';
import { StepFunctionsBatchRunner } from '../../layers/core/src/ports/aws/batch-runner-sfn.ts';
import type { RuntimeAdapters } from '../../layers/core/src/ports/adapters.ts';

/**
 * The function's logger, built before the configuration so that the handlers' middleware can
 * manage its per-invocation keys; the configuration's LOG_LEVEL is read by Powertools itself.
 */
export const lambdaLogger = new Logger({ serviceName: 'gantry' });

let deps: Promise<CoreDeps> | undefined;

export function depsFromEnv(): Promise<CoreDeps> {
  deps ??= Promise.resolve().then(() => {
    const config = loadConfig();
    lambdaLogger.setLogLevel(config.logLevel);
    return createDeps(config, { ...awsAdapters(config, lambdaLogger), ...batchRunnerFromEnv(process.env) });
  });
  return deps;
}

/**
 * Gateway-run batches start an execution of the batch state machine (`BATCH_STATE_MACHINE_ARN`,
 * set by the CDK app on the functions that create batches); without it they are unavailable (503).
 */
export function batchRunnerFromEnv(env: NodeJS.ProcessEnv): Pick<RuntimeAdapters, 'batchRunner'> {
  const arn = env.BATCH_STATE_MACHINE_ARN;
  return arn ? { batchRunner: () => new StepFunctionsBatchRunner(arn) } : {};
}
