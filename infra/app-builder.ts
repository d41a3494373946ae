import { App, Validations, type AppProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { ApiStack } from './stacks/api-stack.ts';
import { DataStack } from './stacks/data-stack.ts';
import { LimitsStack } from './stacks/limits-stack.ts';
import { IdentityStack } from './stacks/identity-stack.ts';
import { ObservabilityStack } from './stacks/observability-stack.ts';
import { MonitoringStack } from './stacks/monitoring-stack.ts';

export interface BuildAppProps {
  /** Passed to the App (tests set outdir and context here). */
  readonly appProps?: AppProps;
  /** Register the cdk-nag packs as validation plugins, so synth fails on any unacknowledged finding. */
  readonly nag?: boolean;
}

export interface GantryApp {
  readonly app: App;
  readonly data: DataStack;
  readonly api: ApiStack;
  readonly limits: LimitsStack;
  readonly identity: IdentityStack;
  readonly observability: ObservabilityStack;
  readonly monitoring: MonitoringStack;
}

/**
 * Builds the whole CDK app without synthesizing it. Stacks are environment-agnostic so synth
 * needs no AWS account; `cdk deploy` takes the account and region from the CLI's credentials.
 */
export function buildApp(props: BuildAppProps = {}): GantryApp {
  const app = new App({
    ...props.appProps,
    context: {
      // Exports and imports: CloudFormation refuses to delete or replace the table while the API uses it.
      '@aws-cdk/core:defaultCrossStackReferences': 'strong',
      ...props.appProps?.context,
    },
  });
  const data = new DataStack(app, 'Gantry-Data', { description: 'Gantry: the single DynamoDB table' });
  const api = new ApiStack(app, 'Gantry-Api', {
    description: 'Gantry: REST API, gateway and admin functions',
    table: data.table,
    blobs: data.blobs,
    credentialsKey: data.credentialsKey,
  });
  const mailFrom: unknown = app.node.tryGetContext('gantry:mailFrom');
  const limits = new LimitsStack(app, 'Gantry-Limits', {
    description: 'Gantry: usage limit alerts (queue, worker) and the usage reset schedule',
    table: data.table,
    ...(typeof mailFrom === 'string' && mailFrom ? { mailFrom } : {}),
  });
  limits.allowAlertsFrom(api.gateway);
  const identity = new IdentityStack(app, 'Gantry-Identity', {
    description: 'Gantry: the API key lifecycle worker and its schedule',
    table: data.table,
    api,
    ...(typeof mailFrom === 'string' && mailFrom ? { mailFrom } : {}),
  });
  const observability = new ObservabilityStack(app, 'Gantry-Observability', {
    description: 'Gantry: request logs (queue, ingest worker) and log exports (queue, export worker)',
    table: data.table,
    blobs: data.blobs,
  });
  observability.allowLogsFrom(api.gateway);
  observability.allowLogsFrom(api.admin);
  observability.allowExportsFrom(api.admin);
  const alarmEmail: unknown = app.node.tryGetContext('gantry:alarmEmail');
  const monitoring = new MonitoringStack(app, 'Gantry-Monitoring', {
    description: 'Gantry: CloudWatch dashboard, alarms and the alarm topic',
    api,
    table: data.table,
    observability,
    queues: [{ name: 'alerts', queue: limits.alerts, deadLetters: limits.alertsDeadLetters }],
    functions: [
      { name: 'limits-alerts', fn: limits.alertsWorker },
      { name: 'usage-reset', fn: limits.resetWorker },
      { name: 'key-lifecycle', fn: identity.lifecycleWorker },
    ],
    ...(typeof alarmEmail === 'string' && alarmEmail ? { alarmEmail } : {}),
  });
  if (props.nag ?? true) {
    // cdk-nag 3 runs as CDK policy-validation plugins (not Aspects) and fails synth on findings.
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  }
  return { app, data, api, limits, identity, observability, monitoring };
}
