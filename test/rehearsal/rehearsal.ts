/**
 * A deploy rehearsal: the app synthesized into a fresh directory (outside the repository, so no
 * node_modules is reachable from a bundle), its DynamoDB tables created on DynamoDB Local from the
 * template, and every Node function started from its asset under AWS's runtime client with its
 * synthesized environment, its own credentials and AWS_ENDPOINT_URL pointing at the stand-ins.
 * docs/deploy.md says what this proves and what only a real account can.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateTableCommand, DynamoDBClient, type CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { buildApp } from '../../infra/app-builder.ts';
import { ACCOUNT, Assembly, REGION, type SynthStateMachine } from './assembly.ts';
import { startFakeAws, type FakeAws } from './aws.ts';
import { startFunction, type FunctionProcess } from './function-process.ts';
import { checkCalls, type IamReport } from './iam.ts';
import type { Outcome } from './runtime-api.ts';
import { StateMachineInterpreter, type ExecutionTrace, type JsonValue, type LambdaAnswer, type Machine } from './step-functions.ts';

/**
 * Synthesizes the app (as `npm run synth` does, without the console's build or cdk-nag) into a new
 * directory. `bundle: false` skips the functions' bundles (templates and policies only: seconds, not a minute).
 */
export function synthesize(context: Record<string, string | boolean> = {}, opts: { bundle?: boolean } = {}): string {
  const root = mkdtempSync(path.join(tmpdir(), 'gantry-rehearsal-'));
  const outdir = path.join(root, 'cdk.out');
  // No built console: its stack keeps only the bucket and distribution (no CDK upload function).
  const consoleDir = path.join(root, 'no-console');
  mkdirSync(consoleDir);
  // As the CDK CLI does: each function records its asset's directory (`aws:asset:path`).
  const bundling = opts.bundle === false ? { 'aws:cdk:bundling-stacks': [] } : {};
  buildApp({ appProps: { outdir, context: { 'aws:cdk:enable-asset-metadata': true, ...bundling, ...context } }, consoleDir, nag: false }).app.synth();
  return outdir;
}

export interface Rehearsal {
  assembly: Assembly;
  aws: FakeAws;
  /** Every Node function, started. */
  functions: FunctionProcess[];
  /** Functions not run (another runtime), with the reason. */
  skipped: string[];
  /** The function whose id (`Stack/LogicalId`) starts with `prefix`. */
  fn(prefix: string): FunctionProcess;
  /**
   * Runs an execution the stand-in recorded (StartExecution) through its state machine's
   * definition: every Task invokes the function process, as the state machine's role (recorded).
   */
  runExecution(execution: FakeAws['executions'][number]): Promise<ExecutionTrace>;
  /** The IAM check of every function's (and state machine's) recorded calls. */
  iam(assembly?: Assembly): Map<string, IamReport>;
  close(): Promise<void>;
}

/** Creates every AWS::DynamoDB::Table of the templates on DynamoDB Local, as declared. */
export async function createTables(assembly: Assembly, endpoint: string): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: REGION, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  try {
    for (const s of assembly.stacks.values()) {
      for (const [id, r] of Object.entries(s.template.Resources)) {
        if (r.Type !== 'AWS::DynamoDB::Table') continue;
        const p = assembly.resolve(r.Properties ?? {}, s.name) as unknown as CreateTableCommandInput;
        const create = client.send(
          new CreateTableCommand({
            TableName: assembly.physicalName(s.name, id),
            KeySchema: p.KeySchema,
            AttributeDefinitions: p.AttributeDefinitions,
            GlobalSecondaryIndexes: p.GlobalSecondaryIndexes,
            BillingMode: 'PAY_PER_REQUEST',
          }),
        );
        // A second rehearsal of the same assembly (a test's mutated copy) shares its tables.
        await create.catch((e: Error) => {
          if (e.name !== 'ResourceInUseException') throw e;
        });
      }
    }
  } finally {
    client.destroy();
  }
}

export interface RehearsalOptions {
  /** The cloud assembly to rehearse (a directory `synthesize` made). */
  cdkOut: string;
  dynamodbEndpoint: string;
  /** Rehearse only these functions (ids starting with any prefix); default all. */
  only?: string[];
  assembly?: Assembly;
}

/** What Step Functions' lambda:invoke integration makes of a function's answer. */
function lambdaAnswer(o: Outcome): LambdaAnswer {
  if (o.kind === 'response') return { payload: (o.body.length ? JSON.parse(o.body.toString('utf8')) : null) as JsonValue };
  if (o.kind === 'stream') return { payload: o.body.toString('utf8') };
  // An error the handler threw is named by its errorType; a runtime that died is Lambda.Unknown.
  return o.stage === 'invoke' ? { errorType: o.errorType, errorMessage: o.errorMessage } : { died: `${o.errorType}: ${o.errorMessage}` };
}

export async function startRehearsal(opts: RehearsalOptions): Promise<Rehearsal> {
  const assembly = opts.assembly ?? new Assembly(opts.cdkOut, randomBytes(4).toString('hex'));
  const [aws] = await Promise.all([startFakeAws(opts.dynamodbEndpoint), createTables(assembly, opts.dynamodbEndpoint)]);
  const all = assembly.functions().filter((f) => !opts.only || opts.only.some((p) => f.id.startsWith(p)));
  const node = all.filter((f) => f.runtime.startsWith('nodejs'));
  const skipped = all.filter((f) => !f.runtime.startsWith('nodejs')).map((f) => `${f.id}: ${f.runtime} is not rehearsed`);
  const functions = await Promise.all(
    node.map((f) =>
      startFunction({
        name: f.id,
        codeDir: f.codeDir,
        handler: f.handler,
        memoryMb: f.memoryMb,
        timeoutMs: Math.min(f.timeoutMs, 60_000),
        env: {
          ...f.environment,
          AWS_REGION: REGION,
          AWS_DEFAULT_REGION: REGION,
          ...aws.credentialsFor(f.id),
          // Every SDK client (and the core's signed JSON client) honours it: all AWS calls reach the stand-ins.
          AWS_ENDPOINT_URL: aws.url,
          // The HTTPS stand-ins (a WebSocket API's @connections) present a certificate of the rehearsal's own.
          NODE_EXTRA_CA_CERTS: aws.caFile,
        },
      }),
    ),
  );
  const byId = new Map(node.map((f) => [f.id, f]));
  const machines = assembly.stateMachines();
  const byArn = new Map(node.map((f) => [assembly.getAtt(f.stack, f.logicalId, 'Arn'), functions.find((p) => p.spec.name === f.id)!]));
  const runExecution = (execution: FakeAws['executions'][number]) => {
    const machine = machines.find((m) => m.arn === execution.stateMachineArn);
    if (!machine) throw new Error(`StartExecution named ${execution.stateMachineArn}, which no template defines`);
    const interpreter = new StateMachineInterpreter({
      invoke: async (functionName, payload) => {
        const arn = functionName.startsWith('arn:') ? functionName : `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${functionName}`;
        aws.calls.push({ caller: machine.id, operation: 'lambda:invoke', action: 'lambda:InvokeFunction', resource: arn });
        const fn = byArn.get(arn.split(':').slice(0, 7).join(':'));
        if (!fn) return { died: `no rehearsed function ${arn}` };
        return lambdaAnswer(await fn.invoke(payload));
      },
    });
    return interpreter.run(machine.definition as unknown as Machine, JSON.parse(execution.input) as JsonValue, execution.name);
  };
  return {
    assembly,
    aws,
    functions,
    skipped,
    fn(prefix) {
      const found = functions.find((f) => f.spec.name.startsWith(prefix));
      if (!found) throw new Error(`no rehearsed function ${prefix}`);
      return found;
    },
    runExecution,
    iam(against = assembly) {
      const reports = new Map<string, IamReport>();
      for (const m of against.stateMachines().filter((sm: SynthStateMachine) => aws.calls.some((c) => c.caller === sm.id))) {
        reports.set(
          m.id,
          checkCalls(
            m,
            aws.calls.filter((c) => c.caller === m.id),
          ),
        );
      }
      const fns = new Map(against.functions().map((f) => [f.id, f]));
      for (const id of byId.keys()) {
        reports.set(
          id,
          checkCalls(
            fns.get(id)!,
            aws.calls.filter((c) => c.caller === id),
          ),
        );
      }
      return reports;
    },
    async close() {
      await Promise.all(functions.map((f) => f.stop()));
      await aws.close();
    },
  };
}
