/**
 * No request log is lost to a crash: the local server (`lambdas/local/main.ts`, as `npm start` runs
 * it) answers chat completions on 4 connections while DynamoDB Local is killed (SIGKILL, by PID),
 * then the server itself is killed in the middle of the load. Restarted on the same data directory,
 * it replays its spool: every request that was answered 200 has exactly one log.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, LOCK_FILE, processAlive } from '../../lambdas/local/dynamodb-local.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const MAIN = path.join(ROOT, 'lambdas/local/main.ts');
const OWNER_KEY = 'gw_crash-test-owner-key-00000000000000001';
const REQUESTS = 300;
const CONNECTIONS = 4;

interface Server {
  child: ChildProcess;
  output: () => string;
  exited: Promise<unknown>;
}

function start(env: Record<string, string>): Server {
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise((r) => child.once('exit', r));
  return { child, output: () => out, exited };
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 45_000, everyMs = 100): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** One chat completion on the shared agent: its status, or 0 when the connection failed. */
function chat(base: string, agent: http.Agent, key: string, mock: MockOpenAI, traceId: string): Promise<number> {
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
  return new Promise((resolve) => {
    const req = http.request(
      `${base}/v1/chat/completions`,
      {
        method: 'POST',
        agent,
        headers: {
          'x-gw-api-key': key,
          'x-gw-provider': 'openai',
          'x-gw-custom-host': `${mock.url}/v1`,
          'x-gw-trace-id': traceId,
          authorization: 'Bearer sk-x',
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        // Answered only once the whole body arrived: a connection cut before its end is no answer.
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
        res.once('error', () => resolve(0));
        res.once('aborted', () => resolve(0));
      },
    );
    req.once('error', () => resolve(0));
    req.end(body);
  });
}

/** Log counts by trace id, over every page of the admin logs API. */
async function logsByTrace(base: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let cursor: string | null = null;
  do {
    const query: string = `workspace_id=default&page_size=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await fetch(`${base}/v1/logs?${query}`, { headers: { 'x-gw-api-key': OWNER_KEY } });
    if (res.status !== 200) throw new Error(`GET /v1/logs: ${res.status} ${await res.text()}`);
    const page = (await res.json()) as { data: { trace_id: string }[]; next_cursor: string | null };
    for (const log of page.data) counts.set(log.trace_id, (counts.get(log.trace_id) ?? 0) + 1);
    cursor = page.next_cursor;
  } while (cursor);
  return counts;
}

describe('request logs across a crash', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gantry-crash-'));
  const running: ChildProcess[] = [];
  let mock: MockOpenAI | undefined;
  afterAll(async () => {
    for (const c of running) c.kill('SIGKILL');
    await mock?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps the log of every request answered 200 while DynamoDB Local and then the server are killed', async () => {
    mock = await startMockOpenAI();
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      PORT: String(port),
      GW_DATA_DIR: dataDir,
      GW_BOOTSTRAP_ADMIN_KEY: OWNER_KEY,
      GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1',
    };
    const first = start(env);
    running.push(first.child);
    await waitFor(() => first.output().includes('listening'), 'the first start');
    const { dynamodbPid } = JSON.parse(readFileSync(path.join(dataDir, LOCK_FILE), 'utf8')) as { dynamodbPid: number };
    const made = await fetch(`${base}/v1/api-keys/workspace/service`, {
      method: 'POST',
      headers: { 'x-gw-api-key': OWNER_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'crash', workspace_id: 'default', scopes: ['completions.write'] }),
    });
    const { key } = (await made.json()) as { key: string };

    // 4 connections; DynamoDB Local dies after a third of the requests, the server after 80%.
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
    const answered: string[] = [];
    let sent = 0;
    let serverKilled = false;
    const connection = async () => {
      while (sent < REQUESTS && !serverKilled) {
        const traceId = `crash-${sent++}`;
        if (sent === Math.floor(REQUESTS / 3)) process.kill(dynamodbPid, 'SIGKILL');
        if (sent === Math.floor(REQUESTS * 0.8)) {
          serverKilled = true;
          first.child.kill('SIGKILL');
        }
        if ((await chat(base, agent, key, mock!, traceId)) === 200) answered.push(traceId);
      }
    };
    await Promise.all(Array.from({ length: CONNECTIONS }, connection));
    agent.destroy();
    await first.exited;
    await waitFor(() => !processAlive(dynamodbPid), 'DynamoDB Local to be gone', 10_000);
    // Requests went on past the database's death, and were answered.
    expect(answered.length).toBeGreaterThan(REQUESTS / 2);

    // The restart on the same data: the spool is replayed to the log-ingest worker.
    const second = start(env);
    running.push(second.child);
    await waitFor(() => second.output().includes('listening'), 'the restart');
    let counts = new Map<string, number>();
    // Once a second: the table is busy with the replay (a read may even time out, 503: asked again).
    await waitFor(
      async () => {
        counts = await logsByTrace(base).catch(() => counts);
        return answered.every((id) => counts.has(id));
      },
      'every answered request to have its log',
      45_000,
      1_000,
    ).catch(() => undefined);
    const missing = answered.filter((id) => !counts.has(id));
    expect(missing, `${missing.length} of ${answered.length} answered requests have no log`).toEqual([]);
    expect(
      [...counts].filter(([, n]) => n !== 1),
      'logs stored more than once',
    ).toEqual([]);

    // Nothing is left waiting in the spool, and health says so.
    await waitFor(
      async () => {
        const health = (await (await fetch(`${base}/v1/health`)).json()) as { status: string; spool?: { logs?: { pending: number } } };
        return health.status === 'ok' && health.spool?.logs?.pending === 0;
      },
      'the spool to be empty',
      15_000,
    );
    const health = (await (await fetch(`${base}/v1/health`)).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ status: 'ok', spool: { logs: { pending: 0, dropped: 0, full: false, max_bytes: 256 * 1024 * 1024 } } });
    second.child.kill('SIGTERM');
    await second.exited;
  }, 120_000);
});
