/**
 * Runs DynamoDB Local (the AWS engine, a Java jar shipped in the amplify-dynamodb-simulator npm
 * package) as a child process: in memory or on disk, on a free port of 127.0.0.1 only, so nothing
 * off the machine can read or change the data. Used by `npm start` and the test setup.
 *
 * Java is started by a small Node watchdog holding an IPC channel to this process: the channel
 * closes when this process ends in any way (SIGKILL and crashes included), and the watchdog then
 * stops Java, so DynamoDB Local never outlives its parent. The watchdog runs in its own process
 * group, so a terminal's Ctrl-C reaches only the parent, which stops DynamoDB Local last, after
 * requests in flight have finished. A lock file in the data directory refuses a second instance.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
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

/** Another process holds the data directory (its DynamoDB Local would share the files). */
export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError';
  constructor(dataDir: string, lockFile: string, holder: string) {
    super(
      `The data directory ${dataDir} is in use by ${holder}.\n` +
        '  Stop that Gantry first, or set GW_DATA_DIR to another directory.\n' +
        `  If no Gantry is running, delete ${lockFile}.`,
    );
  }
}

export interface DynamoDBLocal {
  endpoint: string;
  port: number;
  /** The Java process (for tests and the lock file). */
  pid: number;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** A directory for the data, or ':memory:' to keep nothing. */
  dataDir: string;
  port?: number;
  /** The Java heap in MB (default 512); an in-memory table of millions of items needs more. */
  heapMb?: number;
}

/** The lock file in a data directory: who owns it, and the DynamoDB Local it runs. */
export const LOCK_FILE = 'gantry.lock';

interface LockContent {
  pid: number;
  dynamodbPid?: number;
  dynamodbPort?: number;
}

/**
 * Plain JavaScript run with `node -e` (it must survive bundling): starts the command in its
 * arguments, reports its pid, and stops it when the IPC channel to the parent closes or on SIGTERM.
 */
const WATCHDOG = `
const { spawn } = require('node:child_process');
const [cmd, ...args] = process.argv.slice(1);
const child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] });
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  child.kill('SIGTERM');
  setTimeout(() => child.kill('SIGKILL'), 5000).unref();
};
child.on('spawn', () => process.connected && process.send({ pid: child.pid }));
child.on('error', () => process.exit(127));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
process.on('disconnect', stop);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('SIGHUP', stop);
`;

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

/** Whether a process runs (one we may not signal does too; a zombie waiting to be reaped does not). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !zombie(pid);
}

/** Linux only: a crashed process stays in the table until its parent reaps it. */
function zombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

function readLock(file: string): LockContent | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockContent>;
    return typeof parsed.pid === 'number' ? (parsed as LockContent) : undefined;
  } catch {
    return undefined;
  }
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (processAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/**
 * Takes the data directory's lock file, or throws DataDirInUseError naming its holder. A lock whose
 * owner is gone is taken over once its DynamoDB Local has stopped too (its watchdog stops it within
 * moments of the owner's crash).
 */
async function acquireLock(dataDir: string): Promise<string> {
  const file = path.join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, JSON.stringify({ pid: process.pid } satisfies LockContent), { flag: 'wx' });
      return file;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = readLock(file);
    if (holder && holder.pid !== process.pid && processAlive(holder.pid)) {
      const ddb = holder.dynamodbPort ? `, DynamoDB Local on port ${holder.dynamodbPort}` : '';
      throw new DataDirInUseError(dataDir, file, `Gantry process ${holder.pid}${ddb}`);
    }
    if (holder?.dynamodbPid && !(await waitGone(holder.dynamodbPid, 10_000))) {
      throw new DataDirInUseError(dataDir, file, `DynamoDB Local process ${holder.dynamodbPid}, left running by an earlier Gantry`);
    }
    rmSync(file, { force: true });
  }
  throw new DataDirInUseError(dataDir, file, 'another Gantry starting at the same time');
}

/**
 * DynamoDB Local's command line has no host option and its Jetty server listens on every interface:
 * this launcher (run by `java` from source, no build step) binds the connector to 127.0.0.1 first.
 */
const LOOPBACK_LAUNCHER = `
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class LoopbackDynamoDBLocal {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    java.lang.reflect.Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    for (Connector c : ((Server) field.get(proxy)).getConnectors()) ((ServerConnector) c).setHost("127.0.0.1");
    proxy.start();
  }
}
`;

function launcherFile(): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'gantry-ddb-')), 'LoopbackDynamoDBLocal.java');
  writeFileSync(file, LOOPBACK_LAUNCHER);
  return file;
}

export async function startDynamoDBLocal(opts: StartOptions): Promise<DynamoDBLocal> {
  checkJava();
  const dir = emulatorDir();
  const port = opts.port ?? (await freePort());
  const onDisk = opts.dataDir !== ':memory:';
  const dataDir = path.resolve(opts.dataDir);
  if (onDisk) mkdirSync(dataDir, { recursive: true });
  const lockFile = onDisk ? await acquireLock(dataDir) : undefined;
  const storage = onDisk ? ['-dbPath', dataDir] : ['-inMemory'];
  const classPath = ['DynamoDBLocal.jar', path.join('DynamoDBLocal_lib', '*')].join(path.delimiter);
  const java = [
    'java',
    `-Xmx${opts.heapMb ?? 512}m`,
    `-Djava.library.path=${path.join(dir, 'DynamoDBLocal_lib')}`,
    '-cp',
    classPath,
    launcherFile(),
    '-port',
    String(port),
    '-sharedDb',
    '-disableTelemetry',
    ...storage,
  ];
  const child = spawn(process.execPath, ['-e', WATCHDOG, ...java], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: { ...process.env, DDB_LOCAL_TELEMETRY: '0' },
    // Its own process group: Ctrl-C in a terminal reaches only this process, which stops it last.
    detached: true,
  });
  let output = '';
  const collect = (b: Buffer) => {
    if (output.length < 8_192) output += b.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const javaPid = new Promise<number>((resolve) => child.once('message', (m: { pid?: number }) => resolve(m.pid ?? 0)));
  // The IPC channel closing stops it as well; this is only quicker.
  const killOnExit = () => child.kill('SIGTERM');
  process.once('exit', killOnExit);
  const release = () => {
    process.removeListener('exit', killOnExit);
    if (lockFile && readLock(lockFile)?.pid === process.pid) rmSync(lockFile, { force: true });
  };

  const endpoint = `http://127.0.0.1:${port}`;
  let pid = 0;
  try {
    await waitUntilReady(endpoint, child, () => output);
    pid = await javaPid;
    if (lockFile) writeFileSync(lockFile, JSON.stringify({ pid: process.pid, dynamodbPid: pid, dynamodbPort: port } satisfies LockContent));
  } catch (err) {
    await stopChild(child);
    release();
    throw err;
  }
  return { endpoint, port, pid, stop: () => stopChild(child).finally(release) };
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
    // The watchdog gives Java 5 s to stop before it kills it; this is for a watchdog that hangs.
    const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
