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
import { Assembly, REGION } from './assembly.ts';
import { startFakeAws, type FakeAws } from './aws.ts';
import { startFunction, type FunctionProcess } from './function-process.ts';
import { checkCalls, type IamReport } from './iam.ts';

/** Synthesizes the app (as `npm run synth` does, without the console's build or cdk-nag) into a new directory. */
export function synthesize(context: Record<string, string | boolean> = {}): string {
  const root = mkdtempSync(path.join(tmpdir(), 'gantry-rehearsal-'));
  const outdir = path.join(root, 'cdk.out');
  // No built console: its stack keeps only the bucket and distribution (no CDK upload function).
  const consoleDir = path.join(root, 'no-console');
  mkdirSync(consoleDir);
  // As the CDK CLI does: each function records its asset's directory (`aws:asset:path`).
  buildApp({ appProps: { outdir, context: { 'aws:cdk:enable-asset-metadata': true, ...context } }, consoleDir, nag: false }).app.synth();
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
  /** The IAM check of every function's recorded calls. */
  iam(assembly?: Assembly): Map<string, IamReport>;
  close(): Promise<void>;
}

/** Creates every AWS::DynamoDB::Table of the templates on DynamoDB Local, as declared. */
async function createTables(assembly: Assembly, endpoint: string): Promise<void> {
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
        },
      }),
    ),
  );
  const byId = new Map(node.map((f) => [f.id, f]));
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
    iam(against = assembly) {
      const reports = new Map<string, IamReport>();
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
