/**
 * `npm run bench:realtime`: the latency the realtime relay adds per event (issue 21: at most
 * 0.2 ms at the median). A `ws` client makes sequential round trips (`mock.echo`, echoed by the
 * mock provider) straight to the mock and through Gantry (direct mode, request logs on, a
 * workspace key), interleaved in rounds so both see the same machine. A round trip through
 * Gantry relays two events, so the added latency per event is half the added round trip. Mock
 * and Gantry are child processes; this process is only the client. Prints one JSON document.
 */
import WebSocket from 'ws';
import { endBench, startNodeChild } from './children.ts';
import { medianAndTail, quantile, round3 } from './stats.ts';

const ROUNDS = Number(process.env.BENCH_RT_ROUNDS ?? 10);
const PER_ROUND = Number(process.env.BENCH_RT_EVENTS ?? 1000);
const WARMUP = 1000;
const BUDGET_MS = 0.2;

const log = (msg: string) => process.stderr.write(`[bench:realtime] ${msg}\n`);

async function connect(url: string, headers: Record<string, string>): Promise<WebSocket> {
  const ws = new WebSocket(url, { headers, perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('message', () => resolve()); // session.created: the session is relaying
    ws.once('error', reject);
    ws.once('unexpected-response', (_q, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
  return ws;
}

/** `n` sequential round trips; their times in milliseconds. */
async function roundTrips(ws: WebSocket, n: number): Promise<number[]> {
  const times: number[] = [];
  // A realistic small event: an audio chunk of 20 ms at 24 kHz, base64.
  const event = JSON.stringify({ type: 'mock.echo', audio: Buffer.alloc(960).toString('base64') });
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    await new Promise<void>((resolve) => {
      ws.once('message', () => resolve());
      ws.send(event);
    });
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return times;
}

try {
  const [mock, gantry] = await Promise.all([
    startNodeChild('realtime-mock', 'realtime-mock.ts', {}, 15_000),
    startNodeChild('gantry', 'gantry-server.ts', {}, 90_000),
  ]);
  const model = '?model=gpt-4o-realtime-preview';
  const direct = await connect(`${mock.ready.url.replace('http', 'ws')}/v1/realtime${model}`, { authorization: 'Bearer sk-x' });
  const viaGantry = await connect(`${gantry.ready.url.replace('http', 'ws')}/v1/realtime${model}`, {
    'x-gw-api-key': gantry.ready.apiKey ?? '',
    'x-gw-provider': 'openai',
    'x-gw-custom-host': `${mock.ready.url}/v1`,
    authorization: 'Bearer sk-x',
  });
  await roundTrips(direct, WARMUP);
  await roundTrips(viaGantry, WARMUP);
  const d: number[] = [];
  const g: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    d.push(...(await roundTrips(direct, PER_ROUND)));
    g.push(...(await roundTrips(viaGantry, PER_ROUND)));
    log(`round ${r + 1}/${ROUNDS}`);
  }
  direct.close();
  viaGantry.close();
  const addedPerEvent = (quantile(g, 0.5) - quantile(d, 0.5)) / 2;
  const result = {
    round_trips: d.length,
    direct_rtt_ms: medianAndTail(d),
    gantry_rtt_ms: medianAndTail(g),
    added_per_event_p50_ms: round3(addedPerEvent),
    added_per_event_p99_ms: round3((quantile(g, 0.99) - quantile(d, 0.99)) / 2),
    budget_added_per_event_p50_ms: BUDGET_MS,
    within_budget: addedPerEvent <= BUDGET_MS,
  };
  await endBench({ result });
} catch (err) {
  await endBench({ error: err });
}
