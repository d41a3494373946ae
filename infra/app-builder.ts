import { Annotations, App, CfnResource, ReferenceStrength, Stack, Validations, type AppProps } from 'aws-cdk-lib';
import { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { ApiStack } from './stacks/api-stack.ts';
import { DataStack } from './stacks/data-stack.ts';
import { LimitsStack, USAGE_RESET_RATE } from './stacks/limits-stack.ts';
import { IdentityStack, KEY_LIFECYCLE_RATE } from './stacks/identity-stack.ts';
import { ObservabilityStack } from './stacks/observability-stack.ts';
import { MonitoringStack } from './stacks/monitoring-stack.ts';
import { ConsoleStack } from './stacks/console-stack.ts';
import { McpStack } from './stacks/mcp-stack.ts';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RealtimeStack } from './stacks/realtime-stack.ts';
import { BatchesStack } from './stacks/batches-stack.ts';
import { addContainerOutputs } from './constructs/container-outputs.ts';
import { EXPORTS_QUEUE, LOGS_QUEUE } from '../layers/core/src/observability/messages.ts';
import { ALERTS_QUEUE } from '../layers/core/src/policy/limits/alerts.ts';
import { MCP_SYNC_QUEUE } from '../layers/core/src/mcp/messages.ts';
import { queueUrlVariable } from '../layers/core/src/ports/queue-factory.ts';
import { readSettings, runtimeEnvironment, type GantrySettings } from './settings.ts';

export interface BuildAppProps {
  /** Passed to the App (tests set outdir and context here). */
  readonly appProps?: AppProps;
  /** The built console to upload (default: dist/console of the repository). */
  readonly consoleDir?: string;
  /** Register the cdk-nag packs as validation plugins, so synth fails on any unacknowledged finding. */
  readonly nag?: boolean;
}

export interface GantryApp {
  readonly app: App;
  /** The deployment settings read from context (infra/settings.ts). */
  readonly settings: GantrySettings;
  readonly data: DataStack;
  readonly api: ApiStack;
  readonly limits: LimitsStack;
  readonly identity: IdentityStack;
  readonly observability: ObservabilityStack;
  readonly monitoring: MonitoringStack;
  readonly console: ConsoleStack;
  readonly realtime: RealtimeStack;
  readonly batches: BatchesStack;
  readonly mcp: McpStack;
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
  const settings = readSettings((key) => app.node.tryGetContext(key));
  const { prefix, memoryMb, mailFrom } = settings;
  const mail = mailFrom ? { mailFrom } : {};
  // Construct ids stay fixed (the app's paths); the prefix goes into the CloudFormation stack names,
  // so `cdk deploy -c gantry:prefix=Staging` deploys Staging-Data ... beside Gantry-Data ...
  const data = new DataStack(app, 'Gantry-Data', { stackName: `${prefix}-Data`, description: 'Gantry: the single DynamoDB table' });
  const api = new ApiStack(app, 'Gantry-Api', {
    stackName: `${prefix}-Api`,
    description: 'Gantry: REST API, gateway and admin functions',
    table: data.table,
    blobs: data.blobs,
    credentialsKey: data.credentialsKey,
    memoryMb,
    ...(settings.gatewayReservedConcurrency ? { gatewayReservedConcurrency: settings.gatewayReservedConcurrency } : {}),
    assumableRoleArns: settings.assumableRoleArns,
    secretsPrefix: settings.secretsPrefix,
    batchStateMachineName: `${prefix}-Batches`,
  });
  const limits = new LimitsStack(app, 'Gantry-Limits', {
    stackName: `${prefix}-Limits`,
    description: 'Gantry: usage limit alerts (queue, worker) and the usage reset schedule',
    table: data.table,
    memoryMb,
    ...mail,
  });
  limits.allowAlertsFrom(api.gateway);
  const identity = new IdentityStack(app, 'Gantry-Identity', {
    stackName: `${prefix}-Identity`,
    description: 'Gantry: the first organisation and owner key, the API key lifecycle worker and its schedule',
    table: data.table,
    api,
    memoryMb,
    ...mail,
    ...(settings.publicUrl ? { publicUrl: settings.publicUrl } : {}),
  });
  const observability = new ObservabilityStack(app, 'Gantry-Observability', {
    stackName: `${prefix}-Observability`,
    description: 'Gantry: request logs (queue, ingest worker) and log exports (queue, export worker)',
    table: data.table,
    blobs: data.blobs,
    memoryMb,
  });
  observability.allowLogsFrom(api.gateway);
  observability.allowLogsFrom(api.admin);
  observability.allowExportsFrom(api.admin);
  const monitoring = new MonitoringStack(app, 'Gantry-Monitoring', {
    stackName: `${prefix}-Monitoring`,
    description: 'Gantry: CloudWatch dashboard, alarms and the alarm topic',
    dashboardName: prefix,
    api,
    table: data.table,
    observability,
    queues: [
      { name: 'alerts', queue: limits.alerts, deadLetters: limits.alertsDeadLetters },
      { name: 'usage-reset', deadLetters: limits.resetDeadLetters },
      { name: 'key-lifecycle', deadLetters: identity.lifecycleDeadLetters },
    ],
    functions: [
      { name: 'limits-alerts', fn: limits.alertsWorker },
      { name: 'usage-reset', fn: limits.resetWorker, scheduledEvery: USAGE_RESET_RATE },
      { name: 'key-lifecycle', fn: identity.lifecycleWorker, scheduledEvery: KEY_LIFECYCLE_RATE },
      { name: 'bootstrap', fn: identity.bootstrap.fn },
    ],
    ...(settings.alarmEmail ? { alarmEmail: settings.alarmEmail } : {}),
  });
  const mcp = new McpStack(app, 'Gantry-Mcp', {
    stackName: `${prefix}-Mcp`,
    description: 'Gantry: MCP integration discovery (the mcp-sync queue and its worker)',
    table: data.table,
    credentialsKey: data.credentialsKey,
    syncQueueName: `${prefix}-mcp-sync`,
    memoryMb: memoryMb['mcp-sync'],
    alarmTopic: monitoring.topic,
  });
  mcp.allowSyncFrom('Admin', api.admin);
  const consoleStack = new ConsoleStack(app, 'Gantry-Console', {
    stackName: `${prefix}-Console`,
    description: 'Gantry: the admin console (S3 and CloudFront), with /v1/* sent to the REST API',
    api: api.api,
    consoleDir: props.consoleDir ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'console'),
  });
  const realtime = new RealtimeStack(app, 'Gantry-Realtime', {
    stackName: `${prefix}-Realtime`,
    description: 'Gantry: realtime WebSocket API (API Gateway) and its relay function',
    table: data.table,
    credentialsKey: data.credentialsKey,
    memoryMb: memoryMb.realtime,
    alarmTopic: monitoring.topic,
    relay: settings.realtimeRelay,
    ...(settings.realtimeRelay === 'fargate'
      ? { logsQueue: observability.logs, alertsQueue: limits.alerts, runtimeEnvironment: runtimeEnvironment(settings) }
      : {}),
  });
  if (realtime.fn) {
    observability.allowLogsFrom(realtime.fn);
    limits.allowAlertsFrom(realtime.fn);
  }
  const batches = new BatchesStack(app, 'Gantry-Batches', {
    stackName: `${prefix}-Batches`,
    description: 'Gantry: gateway-run batches (Step Functions state machine and its batch function)',
    table: data.table,
    blobs: data.blobs,
    credentialsKey: data.credentialsKey,
    memoryMb: memoryMb.batch,
    stateMachineName: `${prefix}-Batches`,
    alarmTopic: monitoring.topic,
  });
  observability.allowLogsFrom(batches.fn);
  limits.allowAlertsFrom(batches.fn);
  addContainerOutputs([
    { stack: data, variable: 'GW_TABLE_NAME', value: data.table.tableName },
    { stack: data, variable: 'BLOB_BUCKET', value: data.blobs.bucketName },
    { stack: data, variable: 'CIPHER_KMS_KEY_ID', value: data.credentialsKey.keyArn },
    { stack: observability, variable: queueUrlVariable(LOGS_QUEUE), value: observability.logs.queueUrl },
    { stack: observability, variable: queueUrlVariable(EXPORTS_QUEUE), value: observability.exports.queueUrl },
    { stack: limits, variable: queueUrlVariable(ALERTS_QUEUE), value: limits.alerts.queueUrl },
    { stack: mcp, variable: queueUrlVariable(MCP_SYNC_QUEUE), value: mcp.syncQueue.queueUrl },
    { stack: batches, variable: 'BATCH_STATE_MACHINE_ARN', value: batches.stateMachine.stateMachineArn },
  ]);
  applyRuntimeSettings(app, settings);
  weakenReplaceableReferences(app, data);
  if (props.nag ?? true) {
    // cdk-nag 3 runs as CDK policy-validation plugins (not Aspects) and fails synth on findings.
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  }
  return { app, settings, data, api, limits, identity, observability, monitoring, console: consoleStack, realtime, batches, mcp };
}

/**
 * Queues, functions and the API may be replaced by an update (a renamed or re-created resource):
 * a CloudFormation export of theirs would block that while another stack imports it, so other
 * stacks read them as outputs (`Fn::GetStackOutput`) instead. The table, bucket and keys of the
 * data stack are retained and never replaced: their exports stay, so the data stack cannot be
 * deleted while a stack still uses them.
 */
function weakenReplaceableReferences(app: App, data: DataStack): void {
  for (const c of app.node.findAll()) {
    if (c instanceof CfnResource && Stack.of(c) !== data) c.applyCrossStackReferenceStrength(ReferenceStrength.WEAK);
  }
}

/** Every function gets the runtime variables the settings imply (log level, flags, JWT, hosts). */
function applyRuntimeSettings(app: App, settings: GantrySettings): void {
  const env = runtimeEnvironment(settings);
  for (const c of app.node.findAll()) {
    if (c instanceof LambdaFunction) for (const [k, v] of Object.entries(env)) c.addEnvironment(k, v);
  }
  if (!settings.mailFrom) {
    // Shown by synth and deploy: without a sender, invites and alerts cannot be mailed.
    for (const stack of app.node.children) {
      if (stack instanceof IdentityStack) {
        Annotations.of(stack).addWarningV2(
          'gantry:mailFrom',
          'No gantry:mailFrom: invites, key notices and usage alerts cannot be e-mailed (set a verified SES sender).',
        );
      }
    }
  }
}
