/**
 * `npm start` as a user runs it: the real entry point as a child process, with DynamoDB Local on
 * disk, the first-start key printed once, health, a restart that keeps the data, and Ctrl-C that
 * leaves nothing running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle, LOCAL_BUNDLES } from '../../infra/local-build.ts';
import { freePort } from '../../lambdas/local/dynamodb-local.ts';

let MAIN = '';

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function start(env: Record<string, string>): Started {
  const child = spawn(process.execPath, [MAIN], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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

  it.each(['direct', 'lambda'])('serves health, keeps data across restarts and stops cleanly (%s)', async (mode) => {
    const port = await freePort();
    const dir = path.join(dataDir, mode);
    const env = { PORT: String(port), GW_DATA_DIR: dir, GW_LOCAL_MODE: mode };

    const first = start(env);
    running.push(first.child);
    await waitFor(() => first.output().includes('listening'), 'the first start');
    const health = await fetch(`http://127.0.0.1:${port}/v1/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });

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
});
