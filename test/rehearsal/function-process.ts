/**
 * One synthesized function in its own process, as the managed nodejs24.x runtime starts it: AWS's
 * Runtime Interface Client (aws-lambda-ric, the code that loads and calls handlers in Lambda) with
 * the task root, handler and reserved variables Lambda sets, plus the function's own environment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startRuntimeApi, type InvokeOptions, type Outcome, type RuntimeApi } from './runtime-api.ts';

const RIC = path.join(path.dirname(createRequire(import.meta.url).resolve('aws-lambda-ric/package.json')), 'index.mjs');

export interface FunctionSpec {
  /** `Stack/LogicalId`, used in messages. */
  name: string;
  /** The asset directory: LAMBDA_TASK_ROOT. */
  codeDir: string;
  handler: string;
  memoryMb: number;
  timeoutMs: number;
  /** The function's environment variables, resolved; credentials and endpoints included. */
  env: Record<string, string>;
}

export interface FunctionProcess {
  spec: FunctionSpec;
  invoke(event: unknown, opts?: InvokeOptions): Promise<Outcome>;
  /** What the process wrote (the runtime's log lines), for failure messages. */
  output(): string;
  /** Resolves once the runtime asked for its first invocation, or the init failed. */
  ready: Promise<Outcome | undefined>;
  stop(): Promise<void>;
}

const OUTPUT_LIMIT = 64 * 1024;

export async function startFunction(spec: FunctionSpec): Promise<FunctionProcess> {
  const runtime: RuntimeApi = await startRuntimeApi();
  const functionName = spec.name.replace(/[^A-Za-z0-9-_]/g, '-');
  const child: ChildProcess = spawn(process.execPath, [RIC], {
    cwd: spec.codeDir,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      LANG: 'en_US.UTF-8',
      TZ: ':UTC',
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
      AWS_LAMBDA_FUNCTION_NAME: functionName,
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(spec.memoryMb),
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
      AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${functionName}`,
      AWS_LAMBDA_LOG_STREAM_NAME: '2026/01/01/[$LATEST]rehearsal',
      AWS_LAMBDA_RUNTIME_API: runtime.address,
      LAMBDA_TASK_ROOT: spec.codeDir,
      LAMBDA_RUNTIME_DIR: path.dirname(RIC),
      _HANDLER: spec.handler,
      ...spec.env,
    },
  });
  let out = '';
  const keep = (c: Buffer) => {
    out = (out + c.toString('utf8')).slice(-OUTPUT_LIMIT);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => runtime.fail(`${spec.name} exited (${signal ?? code}) before answering:\n${out.slice(-4000)}`));

  // The runtime's first `next` call (its init is done), or its init error / exit.
  const ready = (async () => {
    for (;;) {
      if (runtime.initError || child.exitCode !== null)
        return runtime.initError ?? { kind: 'error' as const, errorType: 'Runtime.ExitError', errorMessage: out, stage: 'init' as const };
      if (runtime.polled) return undefined;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  return {
    spec,
    ready,
    invoke: (event, opts) => runtime.invoke(event, { timeoutMs: spec.timeoutMs, ...opts }),
    output: () => out,
    async stop() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
      await runtime.close();
    },
  };
}
