/**
 * With a data directory, an answer ends only once its request log is on disk (in the `logs` queue's
 * spool): when the client has the whole answer, a crash of the server can no longer lose its log.
 * Both answer kinds (a JSON body, a stream) and both modes of the local server.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOGS_QUEUE } from '../../layers/core/src/observability/messages.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

describe.each(['direct', 'lambda'] as const)('request logs on disk before the answer ends (%s mode)', (mode) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gantry-durable-'));
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode, { GW_DATA_DIR: dataDir }), startMockOpenAI()]);
    // The worker never stores them here: whatever the spool holds stays in it.
    gw.deps.queues.get(LOGS_QUEUE).setConsumer?.(async (batch) => batch.map((m) => m.id));
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  /** Every line of the `logs` spool's segments, read from disk. */
  const spooled = () => {
    const dir = path.join(dataDir, 'spool', LOGS_QUEUE);
    return readdirSync(dir)
      .filter((f) => f.endsWith('.jsonl'))
      .map((f) => readFileSync(path.join(dir, f), 'utf8'))
      .join('');
  };

  it.each([false, true])('stream: %s', async (stream) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        authorization: 'Bearer sk-x',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    // The whole answer is here: its log is in the spool already.
    const logId = res.headers.get('x-gw-log-id');
    expect(logId).toBeTruthy();
    expect(spooled()).toContain(`"id":"${logId}"`);
  });
});
