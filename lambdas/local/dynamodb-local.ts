/**
 * Runs DynamoDB Local (the AWS engine, a Java jar shipped in the amplify-dynamodb-simulator npm
 * package) as a child process: in memory or on disk, on a free port. Used by `npm start` and the
 * test setup.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';

export class JavaMissingError extends Error {
  override name = 'JavaMissingError';
  constructor() {
    super(
      'DynamoDB Local needs Java 17 or newer, and `java` was not found on PATH.\n' +
        '  Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless\n' +
        '  macOS:         brew install openjdk@17\n' +
        '  Windows:       winget install Microsoft.OpenJDK.17\n' +
        'Then run the command again.',
    );
  }
}

export interface DynamoDBLocal {
  endpoint: string;
  port: number;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** A directory for the data, or ':memory:' to keep nothing. */
  dataDir: string;
  port?: number;
}

function emulatorDir(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator');
}

export function checkJava(): void {
  const probe = spawnSync('java', ['-version'], { stdio: 'ignore' });
  if (probe.error) throw new JavaMissingError();
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export async function startDynamoDBLocal(opts: StartOptions): Promise<DynamoDBLocal> {
  checkJava();
  const dir = emulatorDir();
  const port = opts.port ?? (await freePort());
  const storage = opts.dataDir === ':memory:' ? ['-inMemory'] : ['-dbPath', path.resolve(opts.dataDir)];
  if (opts.dataDir !== ':memory:') mkdirSync(path.resolve(opts.dataDir), { recursive: true });
  const child = spawn(
    'java',
    ['-Xmx512m', `-Djava.library.path=${path.join(dir, 'DynamoDBLocal_lib')}`, '-jar', 'DynamoDBLocal.jar', '-port', String(port), '-sharedDb', ...storage],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DDB_LOCAL_TELEMETRY: '0' } },
  );
  let output = '';
  const collect = (b: Buffer) => {
    if (output.length < 8_192) output += b.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitUntilReady(endpoint, child, () => output);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    endpoint,
    port,
    stop: () => stopChild(child).finally(() => process.removeListener('exit', killOnExit)),
  };
}

async function waitUntilReady(endpoint: string, child: ChildProcess, output: () => string): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const deadline = Date.now() + 60_000;
  try {
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode}:\n${output()}`);
      try {
        await client.send(new ListTablesCommand({}));
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 150));
      }
    }
    throw new Error(`DynamoDB Local did not start within 60 s:\n${output()}`);
  } finally {
    client.destroy();
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
