/**
 * The servers under test run as child processes, so the load generator (this process) never
 * shares an event loop with them. Every child is stopped when the bench ends, however it ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import path from 'node:path';
import { isChildMessage, type ChildMessage, type ReadyMessage, type RssMessage } from './protocol.ts';

export interface Child {
  name: string;
  proc: ChildProcess;
  /** The last lines the child wrote to stderr, for error reports. */
  stderr(): string;
  stop(): Promise<void>;
}

const running = new Set<Child>();

process.once('exit', () => {
  // Last resort: SIGTERM lets gantry-server stop its DynamoDB Local; it also stops on 'disconnect'.
  for (const c of running) c.proc.kill('SIGTERM');
});

function track(name: string, proc: ChildProcess): Child {
  let tail = '';
  proc.stderr?.on('data', (b: Buffer) => {
    tail = (tail + b.toString()).slice(-4_000);
  });
  const child: Child = {
    name,
    proc,
    stderr: () => tail,
    async stop() {
      running.delete(child);
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = once(proc, 'exit');
      const force = setTimeout(() => proc.kill('SIGKILL'), 8_000);
      proc.kill('SIGTERM');
      await exited;
      clearTimeout(force);
    },
  };
  running.add(child);
  return child;
}

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((c) => c.stop()));
}

const here = path.dirname(new URL(import.meta.url).pathname);

/** Ends a bench script: its JSON on stdout (or the error on stderr), every child stopped, the exit code. */
export async function endBench(outcome: { result: unknown } | { error: unknown }): Promise<never> {
  if ('result' in outcome) process.stdout.write(`${JSON.stringify(outcome.result, null, 2)}\n`);
  else console.error(outcome.error);
  await stopAll();
  process.exit('result' in outcome ? 0 : 1);
}

/** Starts one of the bench's own TypeScript servers and waits for its `ready` message. */
export async function startNodeChild(name: string, script: string, env: Record<string, string>, timeoutMs: number, nodeArgs: readonly string[] = []) {
  const proc = spawn(process.execPath, [...nodeArgs, path.resolve(here, script)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  const child = track(name, proc);
  const ready = await new Promise<ReadyMessage>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms:\n${child.stderr()}`)), timeoutMs);
    proc.on('message', (m: unknown) => {
      if (isChildMessage(m) && m.type === 'ready') {
        clearTimeout(timer);
        resolve(m);
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with code ${code} before it was ready:\n${child.stderr()}`));
    });
  });
  return { child, ready };
}

/** Sends a bench child a question over IPC and waits for its answer of the same type. */
export function ask<T extends ChildMessage['type']>(
  child: Child,
  question: { type: T } & Record<string, unknown>,
  timeoutMs = 5_000,
): Promise<Extract<ChildMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${child.name} did not answer ${question.type}`)), timeoutMs);
    const onMessage = (m: unknown) => {
      if (isChildMessage(m) && m.type === question.type) {
        clearTimeout(timer);
        child.proc.off('message', onMessage);
        resolve(m as Extract<ChildMessage, { type: T }>);
      }
    };
    child.proc.on('message', onMessage);
    child.proc.send(question);
  });
}

/** Asks a bench child for its resident memory. */
export const askRss = (child: Child): Promise<RssMessage> => ask(child, { type: 'rss' });

/** The Portkey gateway's Node server, headless (no log UI), on the given port. */
export function startPortkey(port: number): Child {
  const require = createRequire(import.meta.url);
  const entry = path.join(path.dirname(require.resolve('@portkey-ai/gateway/package.json')), 'build', 'start-server.js');
  const shim = path.join(here, 'portkey-stream-shim.ts');
  const proc = spawn(process.execPath, ['--import', shim, entry, `--port=${port}`, '--headless'], {
    // Its default trusted custom hosts already include 127.0.0.1; set it anyway so that stays true.
    env: { ...process.env, TRUSTED_CUSTOM_HOSTS: '127.0.0.1,localhost', NODE_ENV: 'production' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return track('portkey', proc);
}
