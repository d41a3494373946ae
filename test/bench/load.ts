/**
 * The load generator: node:http with a keep-alive Agent (one socket per connection), timed with
 * process.hrtime.bigint. Any answer other than 200 fails the bench: a fast error is no result.
 */
import http from 'node:http';

export interface Target {
  name: string;
  url: URL;
  headers: Record<string, string>;
}

export interface Stats {
  n: number;
  mean: number;
  p50: number;
  p99: number;
}

export interface ThroughputResult {
  rps: number;
  requests: number;
  seconds: number;
}

const REQUEST_TIMEOUT_MS = 10_000;

export const CHAT_BODY = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] }));
export const STREAM_BODY = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }], stream: true }));

export const newAgent = (connections: number): http.Agent =>
  new http.Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections, keepAliveMsecs: 1_000 });

export interface Timing {
  /** Nanoseconds from sending to the first body byte, and to the end of the answer. */
  firstChunkNs: bigint;
  totalNs: bigint;
  reused: boolean;
}

/** One request; resolves when the whole answer has been read. */
export function request(agent: http.Agent, t: Target, body: Buffer): Promise<Timing> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    let first = 0n;
    const req = http.request(
      {
        host: t.url.hostname,
        port: t.url.port,
        path: t.url.pathname,
        method: 'POST',
        agent,
        headers: { ...t.headers, 'content-length': String(body.length) },
      },
      (res) => {
        if (res.statusCode !== 200) {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () => {
            const text = Buffer.concat(parts).toString('utf8').slice(0, 500);
            reject(new Error(`${t.name} answered ${res.statusCode}: ${text}`));
          });
          return;
        }
        res.on('data', () => {
          if (first === 0n) first = process.hrtime.bigint();
        });
        res.on('end', () => {
          const end = process.hrtime.bigint();
          resolve({ firstChunkNs: (first || end) - start, totalNs: end - start, reused: req.reusedSocket });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`${t.name}: no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', (err) => reject(new Error(`${t.name}: ${err.message}`)));
    req.end(body);
  });
}

export function stats(samplesNs: readonly bigint[]): Stats {
  const ms = samplesNs.map((ns) => Number(ns) / 1e6).sort((a, b) => a - b);
  // Nearest-rank percentiles.
  const at = (p: number) => ms[Math.min(ms.length - 1, Math.max(0, Math.ceil(p * ms.length) - 1))] ?? NaN;
  const mean = ms.reduce((s, v) => s + v, 0) / ms.length;
  return { n: ms.length, mean: round(mean), p50: round(at(0.5)), p99: round(at(0.99)) };
}

export const round = (v: number, digits = 3): number => {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
};

/**
 * Sequential requests on one keep-alive connection per target, run in interleaved blocks (a block
 * of each target in turn) so that drift and noise from the rest of the machine fall on every target
 * alike instead of on whichever was measured at a bad moment.
 */
export async function interleaved(
  targets: readonly Target[],
  body: Buffer,
  warmup: number,
  n: number,
  pick: (x: Timing) => bigint,
  blocks = 8,
): Promise<Record<string, Stats & { sockets_opened: number }>> {
  const lanes = targets.map((t) => ({ t, agent: newAgent(1), samples: [] as bigint[], opened: 0 }));
  try {
    for (const lane of lanes) {
      for (let k = 0; k < warmup; k++) await request(lane.agent, lane.t, body);
    }
    for (let b = 0; b < blocks; b++) {
      // Spread n over the blocks, the remainder on the first ones.
      const count = Math.floor(n / blocks) + (b < n % blocks ? 1 : 0);
      for (const lane of lanes) {
        for (let k = 0; k < count; k++) {
          const r = await request(lane.agent, lane.t, body);
          if (!r.reused) lane.opened++;
          lane.samples.push(pick(r));
        }
      }
    }
    return Object.fromEntries(lanes.map((l) => [l.t.name, { ...stats(l.samples), sockets_opened: l.opened }]));
  } finally {
    for (const lane of lanes) lane.agent.destroy();
  }
}

/** Called as the measured part of a closed-loop run starts and once its last answer has come (not around the warm-up). */
export interface RunHooks {
  onStart?: () => void;
  onEnd?: () => void;
}

/** `connections` closed loops for `seconds` (after a short warm-up); completed answers per second. */
export async function closedLoop(
  t: Target,
  body: Buffer,
  connections: number,
  seconds: number,
  warmupSeconds: number,
  hooks: RunHooks = {},
): Promise<ThroughputResult> {
  const agent = newAgent(connections);
  const run = async (durationNs: bigint) => {
    const start = process.hrtime.bigint();
    const deadline = start + durationNs;
    let count = 0;
    const worker = async () => {
      while (process.hrtime.bigint() < deadline) {
        await request(agent, t, body);
        count++;
      }
    };
    await Promise.all(Array.from({ length: connections }, worker));
    return { count, elapsedNs: process.hrtime.bigint() - start };
  };
  try {
    await run(BigInt(Math.round(warmupSeconds * 1e9)));
    hooks.onStart?.();
    const { count, elapsedNs } = await run(BigInt(Math.round(seconds * 1e9)));
    hooks.onEnd?.();
    const elapsed = Number(elapsedNs) / 1e9;
    return { rps: Math.round(count / elapsed), requests: count, seconds: round(elapsed, 2) };
  } finally {
    agent.destroy();
  }
}
