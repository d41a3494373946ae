/**
 * `npm run bench:mcp`: the latency the MCP gateway adds to a warm `tools/call` (issue 19: at most
 * 1 ms at the median). Sequential calls on one session each, straight to the SDK MCP server and
 * through Gantry (direct mode, request logs on, a workspace key, a sealed session opened on every
 * call), interleaved in rounds so all see the same machine. A bare node:http pass-through proxy
 * (bare-proxy.ts) runs beside them as the ceiling: what any extra hop costs on this machine, so the
 * gap between it and Gantry is the cost of Gantry's own work. The server, the proxy and Gantry are
 * child processes; this process is only the client. Prints one JSON document.
 */
import http from 'node:http';
import { endBench, startNodeChild } from './children.ts';
import { medianAndTail, quantile, round3 } from './stats.ts';

const ROUNDS = Number(process.env.BENCH_MCP_ROUNDS ?? 10);
const PER_ROUND = Number(process.env.BENCH_MCP_CALLS ?? 500);
const WARMUP = 500;
const BUDGET_MS = 1;

const log = (msg: string) => process.stderr.write(`[bench:mcp] ${msg}\n`);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

interface Session {
  url: string;
  headers: Record<string, string>;
}

async function post(s: Session, body: unknown): Promise<{ status: number; sessionId: string | undefined; text: string }> {
  const payload = JSON.stringify(body);
  const headers = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(payload)),
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
    ...s.headers,
  };
  return new Promise((resolve, reject) => {
    const req = http.request(s.url, { method: 'POST', agent, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const sid = res.headers['mcp-session-id'];
        resolve({ status: res.statusCode ?? 0, sessionId: typeof sid === 'string' ? sid : undefined, text });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** `initialize` and `notifications/initialized`: a session ready for calls. */
async function open(url: string, headers: Record<string, string>): Promise<Session> {
  const s = { url, headers };
  const init = await post(s, {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
  });
  if (init.status !== 200 || !init.sessionId) throw new Error(`initialize: ${init.status} ${init.text}`);
  const session = { url, headers: { ...headers, 'mcp-session-id': init.sessionId } };
  await post(session, { jsonrpc: '2.0', method: 'notifications/initialized' });
  return session;
}

async function calls(s: Session, n: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    const r = await post(s, { jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hello' } } });
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (r.status !== 200 || !r.text.includes('hello')) throw new Error(`tools/call: ${r.status} ${r.text}`);
  }
  return times;
}

try {
  const mock = await startNodeChild('mcp-mock', 'mcp-mock.ts', {}, 15_000);
  const [gantry, bare] = await Promise.all([
    startNodeChild('gantry', 'gantry-server.ts', { BENCH_MCP_URL: mock.ready.url }, 90_000),
    startNodeChild('bare_proxy', 'bare-proxy.ts', { BENCH_UPSTREAM: new URL(mock.ready.url).origin }, 15_000),
  ]);
  const direct = await open(mock.ready.url, {});
  const viaProxy = await open(`${bare.ready.url}/mcp`, {});
  const viaGantry = await open(`${gantry.ready.url}/mcp/${gantry.ready.mcpSlug}`, { 'x-gw-api-key': gantry.ready.apiKey ?? '' });
  for (const s of [direct, viaProxy, viaGantry]) await calls(s, WARMUP);
  const d: number[] = [];
  const b: number[] = [];
  const g: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    d.push(...(await calls(direct, PER_ROUND)));
    b.push(...(await calls(viaProxy, PER_ROUND)));
    g.push(...(await calls(viaGantry, PER_ROUND)));
    log(`round ${r + 1}/${ROUNDS}`);
  }
  const added = quantile(g, 0.5) - quantile(d, 0.5);
  const result = {
    calls: d.length,
    direct_ms: medianAndTail(d),
    bare_proxy_ms: medianAndTail(b),
    gantry_ms: medianAndTail(g),
    added_p50_ms: round3(added),
    added_p99_ms: round3(quantile(g, 0.99) - quantile(d, 0.99)),
    /** The hop alone (the bare proxy over direct), and Gantry's own work (Gantry over the bare proxy). */
    hop_p50_ms: round3(quantile(b, 0.5) - quantile(d, 0.5)),
    gantry_over_bare_proxy_p50_ms: round3(quantile(g, 0.5) - quantile(b, 0.5)),
    budget_added_p50_ms: BUDGET_MS,
    within_budget: added <= BUDGET_MS,
  };
  agent.destroy();
  await endBench({ result });
} catch (err) {
  await endBench({ error: err });
}
