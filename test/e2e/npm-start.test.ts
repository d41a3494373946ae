/**
 * `npm start` as a user runs it: the real entry point as a child process, with DynamoDB Local on
 * disk, the first-start key printed once, health, a restart that keeps the data, and Ctrl-C that
 * leaves nothing running. Stopped like a service: SIGTERM through npm, requests in flight that
 * finish, request logs that are kept, DynamoDB Local that dies with a killed server, and a data
 * directory that one Gantry at a time may use.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle, LOCAL_BUNDLES } from '../../infra/local-build.ts';
import { freePort, LOCK_FILE, processAlive } from '../../lambdas/local/dynamodb-local.ts';
import WebSocket from 'ws';
import { startMockOpenAI } from '../support/mock-openai.ts';
import { startMockRealtime } from '../support/mock-realtime.ts';

let MAIN = '';
const ROOT = path.resolve(import.meta.dirname, '../..');
const OWNER_KEY = 'gw_service-test-owner-key-000000000000001';

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function start(env: Record<string, string>, command: string[] = [process.execPath, MAIN]): Started {
  const [file, ...args] = command;
  const child = spawn(file!, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, output: () => out, exited };
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The data directory's lock: the server's pid and its DynamoDB Local's. */
const lockOf = (dir: string) => JSON.parse(readFileSync(path.join(dir, LOCK_FILE), 'utf8')) as { pid: number; dynamodbPid: number; dynamodbPort: number };

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

describe('npm start', () => {
  // `npm start` builds the bundle, then runs it: so does this test.
  beforeAll(async () => {
    MAIN = await buildBundle(LOCAL_BUNDLES.server!);
  });
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gantry-start-'));
  const running: ChildProcess[] = [];
  afterAll(() => {
    for (const c of running) c.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });
  /** Starts Gantry (or `command`) and waits until it listens. */
  const startReady = async (env: Record<string, string>, what: string, command?: string[]) => {
    const s = start(env, command);
    running.push(s.child);
    await waitFor(() => s.output().includes('listening'), what);
    return s;
  };

  it.each(['direct', 'lambda'])(
    'serves health, keeps data across restarts and stops cleanly (%s)',
    async (mode) => {
      const port = await freePort();
      const dir = path.join(dataDir, mode);
      const env = { PORT: String(port), GW_DATA_DIR: dir, GW_LOCAL_MODE: mode };

      const first = start(env);
      running.push(first.child);
      await waitFor(() => first.output().includes('listening'), 'the first start');
      const health = await fetch(`http://127.0.0.1:${port}/v1/health`);
      expect(health.status).toBe(200);
      // With a data directory the request logs wait in a spool on disk: health reports it.
      expect(await health.json()).toMatchObject({ status: 'ok', spool: { logs: { dropped: 0, full: false } } });

      const key = first.output().match(/\n\s+(gw_[A-Za-z0-9_-]{20,})\s*\n/)?.[1];
      expect(key, first.output()).toBeDefined();
      const list = await fetch(`http://127.0.0.1:${port}/v1/api-keys`, { headers: { 'x-gw-api-key': key! } });
      expect(list.status).toBe(200);
      const ddbPort = Number(first.output().match(/DynamoDB Local on port (\d+)/)?.[1]);

      first.child.kill('SIGINT');
      expect(await first.exited).toBe(0);
      expect(await portOpen(port)).toBe(false);
      expect(await portOpen(ddbPort)).toBe(false);

      // The second start finds the organisation: no new key is printed, the first one still works.
      const second = start(env);
      running.push(second.child);
      await waitFor(() => second.output().includes('listening'), 'the second start');
      expect(second.output()).not.toContain('shown once');
      const again = await fetch(`http://127.0.0.1:${port}/v1/api-keys`, { headers: { 'x-gw-api-key': key! } });
      expect(again.status).toBe(200);
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    },
    120_000,
  );

  it('drains requests in flight on SIGTERM, keeps their logs, and refuses a second Gantry on the same data', async () => {
    const mock = await startMockOpenAI();
    const port = await freePort();
    const dir = path.join(dataDir, 'drain');
    // A grace period far beyond what draining takes: the request is held until the test has seen the listener close.
    const env = {
      PORT: String(port),
      GW_DATA_DIR: dir,
      GW_BOOTSTRAP_ADMIN_KEY: OWNER_KEY,
      GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1',
      GW_SHUTDOWN_GRACE_SECONDS: '60',
    };
    const first = await startReady(env, 'the first start');
    const lock = lockOf(dir);
    expect(lock.pid).toBe(first.child.pid);

    const second = start({ ...env, PORT: String(await freePort()) });
    running.push(second.child);
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(`is in use by Gantry process ${lock.pid}, DynamoDB Local on port ${lock.dynamodbPort}`);
    expect(second.output()).toContain('set GW_DATA_DIR to another directory');

    const base = `http://127.0.0.1:${port}`;
    const created = await fetch(`${base}/v1/api-keys/workspace/service`, {
      method: 'POST',
      headers: { 'x-gw-api-key': OWNER_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'drain', workspace_id: 'default', scopes: ['completions.write'] }),
    });
    const { key } = (await created.json()) as { key: string };
    // Held, not delayed: however slowly a busy machine handles the SIGTERM, the request is still in flight.
    let release: () => void = () => undefined;
    mock.queue.push({ kind: 'hold', until: new Promise<void>((resolve) => (release = resolve)) });
    let settled = false;
    const inFlight = fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        'x-gw-trace-id': 'drain-1',
        authorization: 'Bearer sk-x',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'slow' }] }),
    }).finally(() => (settled = true));
    await waitFor(() => mock.received.length === 1, 'the provider call', 30_000);

    first.child.kill('SIGTERM');
    // No new connection is accepted while the slow request still runs...
    await waitFor(async () => !(await portOpen(port)), 'the listener to close', 30_000);
    expect(settled).toBe(false);
    // ...and that request completes.
    release();
    const answer = await inFlight;
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBeTruthy();
    expect(await first.exited).toBe(0);
    expect(processAlive(lock.dynamodbPid)).toBe(false);
    expect(existsSync(path.join(dir, LOCK_FILE))).toBe(false);
    await mock.close();

    // Its request log was written before DynamoDB Local stopped.
    const third = await startReady(env, 'the restart');
    const logs = await fetch(`${base}/v1/logs?workspace_id=default&trace_id=drain-1`, { headers: { 'x-gw-api-key': OWNER_KEY } });
    expect(((await logs.json()) as { data: unknown[] }).data, first.output()).toHaveLength(1);
    third.child.kill('SIGTERM');
    expect(await third.exited).toBe(0);
  }, 120_000);

  it('stops DynamoDB Local when the server is killed, and the next start takes the data over', async () => {
    const port = await freePort();
    const env = { PORT: String(port), GW_DATA_DIR: path.join(dataDir, 'crash'), GW_BOOTSTRAP_ADMIN_KEY: OWNER_KEY };
    const first = await startReady(env, 'the first start');
    const { dynamodbPid } = lockOf(env.GW_DATA_DIR);

    first.child.kill('SIGKILL');
    await first.exited;
    await waitFor(() => !processAlive(dynamodbPid), 'DynamoDB Local to stop', 30_000);

    const second = await startReady(env, 'the second start');
    const list = await fetch(`http://127.0.0.1:${port}/v1/api-keys`, { headers: { 'x-gw-api-key': OWNER_KEY } });
    expect(list.status).toBe(200);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 120_000);

  it('passes SIGTERM sent to `npm start` on to the server', async () => {
    const port = await freePort();
    const dir = path.join(dataDir, 'npm');
    // Under `npm test` the npm that runs the tests; else the one on PATH.
    const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];
    const s = await startReady({ PORT: String(port), GW_DATA_DIR: dir }, 'npm start', [...npm, 'start']);
    const lock = lockOf(dir);

    s.child.kill('SIGTERM');
    await s.exited;
    await waitFor(() => !processAlive(lock.pid) && !processAlive(lock.dynamodbPid), 'the server and DynamoDB Local to stop', 30_000);
    expect(s.output()).toContain('SIGTERM: stopping Gantry');
    expect(await portOpen(port)).toBe(false);
  }, 120_000);

  it('uses GW_BOOTSTRAP_ADMIN_KEY and keeps nothing with GW_DATA_DIR=:memory:', async () => {
    const port = await freePort();
    const key = 'gw_my-chosen-bootstrap-key-000000000001';
    const s = start({ PORT: String(port), GW_DATA_DIR: ':memory:', GW_BOOTSTRAP_ADMIN_KEY: key });
    running.push(s.child);
    await waitFor(() => s.output().includes('listening'), 'start');
    expect(s.output()).not.toContain(key);
    const res = await fetch(`http://127.0.0.1:${port}/v1/api-keys`, { headers: { 'x-gw-api-key': key } });
    expect(res.status).toBe(200);
    s.child.kill('SIGINT');
    expect(await s.exited).toBe(0);
  }, 120_000);

  it('relays a realtime session with the bundled server, and stops with the session still open', async () => {
    const mock = await startMockRealtime();
    try {
      const port = await freePort();
      const admin = 'gw_realtime-bootstrap-key-0000000000001';
      const s = await startReady({ PORT: String(port), GW_DATA_DIR: ':memory:', GW_BOOTSTRAP_ADMIN_KEY: admin, GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1' }, 'start');
      const made = await fetch(`http://127.0.0.1:${port}/v1/api-keys/workspace/service`, {
        method: 'POST',
        headers: { 'x-gw-api-key': admin, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'rt', workspace_id: 'default', scopes: ['completions.write'] }),
      });
      const { key } = (await made.json()) as { key: string };
      const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/realtime?model=gpt-realtime`, {
        headers: { 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1`, authorization: 'Bearer sk-x' },
      });
      const first = await new Promise<Record<string, unknown>>((resolve, reject) => {
        ws.once('message', (data: Buffer) => resolve(JSON.parse(data.toString()) as Record<string, unknown>));
        ws.once('error', reject);
      });
      expect(first.type).toBe('session.created');
      const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
      s.child.kill('SIGINT');
      expect(await closed).toBe(1001);
      expect(await s.exited).toBe(0);
    } finally {
      await mock.close();
    }
  }, 120_000);

  it('explains how to install Java when it is missing', async () => {
    const s = start({ PATH: '/nonexistent', GW_DATA_DIR: ':memory:', PORT: '0' });
    expect(await s.exited).toBe(1);
    expect(s.output()).toMatch(/Java 17/);
    expect(s.output()).toMatch(/apt-get install -y openjdk-17-jre-headless/);
  });

  it('fails at start naming a bad variable', async () => {
    const s = start({ GW_LOCAL_MODE: 'sideways', GW_DATA_DIR: ':memory:' });
    expect(await s.exited).toBe(1);
    expect(s.output()).toContain('GW_LOCAL_MODE');
  });

  it('fails at start naming a bad GW_SHUTDOWN_GRACE_SECONDS', async () => {
    const s = start({ GW_SHUTDOWN_GRACE_SECONDS: 'soon', GW_DATA_DIR: ':memory:' });
    expect(await s.exited).toBe(1);
    expect(s.output()).toContain('GW_SHUTDOWN_GRACE_SECONDS must be a whole number of seconds');
  });
});
