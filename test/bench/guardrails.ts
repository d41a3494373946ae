/**
 * Guardrail hooks under measurement (issue 16): what a before-request hook of local checks adds at
 * the median, and what a local output check on a stream does to its chunks. The stream mock lives
 * in this process so that each chunk's send time and receive time are read on one clock: a chunk's
 * added delay is its receive time minus the later of its send time and the send time of the chunk
 * that completed its window (the hold-back a window means by design); the first chunk is compared
 * with the window's fill time. Run alone with `node test/bench/guardrails.ts`, or from run.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CHAT_BODY, interleaved, newAgent, round, stats, type Target } from './load.ts';

const WINDOW = 200;
const CHUNK = 'abcdefghi '; // 10 characters
const CHUNKS = 60;
const GAP_MS = 2;
const STREAM_BODY = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }], stream: true }));
const LOCAL_CHECKS = [
  {
    'default.contains': { operator: 'none', words: ['glpat-', 'BEGIN PRIVATE KEY'] },
    'default.regexMatch': { rule: '\\b\\d{3}-\\d{2}-\\d{4}\\b', not: true },
    deny: true,
  },
];

interface StreamMock {
  url: string;
  /** Send times (ns) of the content chunks of the stream being answered. */
  sent: bigint[];
  close(): Promise<void>;
}

const frame = (delta: Record<string, unknown>, finish: string | null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** A provider streaming CHUNKS content chunks GAP_MS apart (JSON answers for the rest). */
async function startStreamMock(): Promise<StreamMock> {
  const mock: StreamMock = { url: '', sent: [], close: async () => undefined };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (!body.includes('"stream":true')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'chatcmpl-bench',
            object: 'chat.completion',
            created: 1,
            model: 'gpt-4o-mini',
            choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(frame({ role: 'assistant', content: '' }, null));
      mock.sent = [];
      let i = 0;
      const next = () => {
        mock.sent.push(process.hrtime.bigint());
        res.write(frame({ content: CHUNK }, null));
        if (++i < CHUNKS) setTimeout(next, GAP_MS);
        else res.end(`${frame({}, 'stop')}data: [DONE]\n\n`);
      };
      next();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  mock.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  mock.close = () => new Promise<void>((r) => server.close(() => r()));
  return mock;
}

/** One streamed request: the receive time of each content chunk, and when it was sent. */
function streamOnce(agent: http.Agent, t: Target, mock: StreamMock): Promise<{ start: bigint; received: bigint[] }> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const received: bigint[] = [];
    let pending = '';
    const req = http.request(
      {
        host: t.url.hostname,
        port: t.url.port,
        path: t.url.pathname,
        method: 'POST',
        agent,
        headers: { ...t.headers, 'content-length': String(STREAM_BODY.length) },
      },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`${t.name} answered ${res.statusCode}`));
        res.on('data', (c: Buffer) => {
          const now = process.hrtime.bigint();
          pending += c.toString('utf8');
          const events = pending.split('\n\n');
          pending = events.pop() ?? '';
          for (const e of events) if (e.includes(`"content":"${CHUNK}"`)) received.push(now);
        });
        res.on('end', () =>
          received.length === CHUNKS ? resolve({ start, received }) : reject(new Error(`${t.name}: ${received.length} of ${CHUNKS} chunks`)),
        );
      },
    );
    req.on('error', reject);
    req.end(STREAM_BODY);
    void mock;
  });
}

/** For each chunk, the send time of the chunk that completed its window (the gate's hold-back). */
function windowClosers(sent: readonly bigint[], size: number): bigint[] {
  const closers: bigint[] = [];
  let pending = 0;
  let open: number[] = [];
  sent.forEach((_, i) => {
    pending += CHUNK.length;
    open.push(i);
    if (pending >= size || i === sent.length - 1) {
      for (const j of open) closers[j] = sent[i]!;
      open = [];
      pending = 0;
    }
  });
  return closers;
}

async function streamStats(t: Target, mock: StreamMock, n: number, window: number | undefined) {
  const agent = newAgent(1);
  const first: bigint[] = [];
  const added: bigint[] = [];
  const gaps: bigint[] = [];
  try {
    for (let k = 0; k < n + 5; k++) {
      const { start, received } = await streamOnce(agent, t, mock);
      if (k < 5) continue; // warm-up
      const hold = window ? windowClosers(mock.sent, window) : mock.sent;
      first.push(received[0]! - start);
      received.forEach((at, i) => {
        const due = hold[i]! > mock.sent[i]! ? hold[i]! : mock.sent[i]!;
        added.push(at - due);
        if (i > 0) gaps.push(at - received[i - 1]!);
      });
    }
  } finally {
    agent.destroy();
  }
  return { first_chunk: stats(first), added_per_chunk_beyond_window: stats(added), gap_between_chunks: stats(gaps) };
}

/** Both measurements against a running Gantry (`gantryUrl`, a workspace key). */
export async function benchGuardrails(gantryUrl: string, apiKey: string, requests: number, streams: number) {
  const mock = await startStreamMock();
  try {
    const base = { provider: 'openai', api_key: 'sk-x', custom_host: `${mock.url}/v1` };
    const target = (name: string, config: Record<string, unknown>): Target => ({
      name,
      url: new URL('/v1/chat/completions', gantryUrl),
      headers: { 'content-type': 'application/json', 'x-gw-api-key': apiKey, 'x-gw-config': JSON.stringify(config) },
    });
    const plain = target('no_hooks', base);
    const before = target('before_hook', { ...base, input_guardrails: LOCAL_CHECKS });
    const json = await interleaved([plain, before], CHAT_BODY, Math.min(500, requests), requests, (x) => x.totalNs);
    const output = target('output_check', { ...base, output_guardrails: LOCAL_CHECKS });
    const withCheck = await streamStats(output, mock, streams, WINDOW);
    const without = await streamStats(plain, mock, streams, undefined);
    return {
      before_request_hook: { no_hooks: json.no_hooks, two_local_checks: json.before_hook, added_p50_ms: round(json.before_hook!.p50 - json.no_hooks!.p50) },
      stream_output_check: {
        stream: `${CHUNKS} chunks of ${CHUNK.length} characters, ${GAP_MS} ms apart; window ${WINDOW} characters`,
        window_fill_ms: (WINDOW / CHUNK.length - 1) * GAP_MS,
        no_hooks: without,
        output_check: withCheck,
        added_p50_ms_beyond_window: round(withCheck.added_per_chunk_beyond_window.p50 - without.added_per_chunk_beyond_window.p50),
        added_p99_ms_beyond_window: round(withCheck.added_per_chunk_beyond_window.p99 - without.added_per_chunk_beyond_window.p99),
        first_chunk_added_p50_ms: round(withCheck.first_chunk.p50 - without.first_chunk.p50),
      },
    };
  } finally {
    await mock.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { buildBundle, LOCAL_BUNDLES } = await import('../../infra/local-build.ts');
  const { startNodeChild, stopAll } = await import('./children.ts');
  try {
    const file = await buildBundle(LOCAL_BUNDLES.bench!);
    const gantry = await startNodeChild('gantry', file, { LOG_LEVEL: 'INFO' }, 90_000);
    const figures = await benchGuardrails(
      gantry.ready.url,
      gantry.ready.apiKey ?? '',
      Number(process.env.BENCH_REQUESTS ?? 2000),
      Number(process.env.BENCH_STREAM_REQUESTS ?? 100),
    );
    process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  } finally {
    await stopAll();
  }
}
