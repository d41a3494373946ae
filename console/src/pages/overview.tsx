/** Overview: requests, cost, tokens, errors and latency percentiles over time, from /v1/analytics/graphs. */
import { useState } from 'preact/hooks';
import { api, query, type Json } from '../api.ts';
import { LineChart, type Series } from '../chart.tsx';
import type { Session } from '../session.ts';
import { ErrorNote, useLoad } from '../ui.tsx';

interface Graph {
  summary: Json;
  data_points: Json[];
}

const RANGES: Record<string, { ms: number; granularity: string }> = {
  'Last hour': { ms: 3_600_000, granularity: 'minute' },
  'Last 24 hours': { ms: 86_400_000, granularity: 'hour' },
  'Last 7 days': { ms: 7 * 86_400_000, granularity: 'day' },
};

const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

interface ChartSpec {
  graph: string;
  title: string;
  keys: string[];
  total: (s: Json) => string;
}

const CHARTS: ChartSpec[] = [
  { graph: 'requests', title: 'Requests', keys: ['total'], total: (s) => String(num(s.total)) },
  { graph: 'cost', title: 'Cost (cents)', keys: ['total'], total: (s) => `${num(s.total)}¢` },
  { graph: 'tokens', title: 'Tokens', keys: ['total'], total: (s) => String(num(s.total)) },
  { graph: 'errors', title: 'Errors', keys: ['total'], total: (s) => String(num(s.total)) },
  { graph: 'latency', title: 'Latency (ms)', keys: ['p50', 'p95', 'p99'], total: (s) => `p50 ${num(s.p50)} · p95 ${num(s.p95)} · p99 ${num(s.p99)}` },
];

export function Overview({ session }: { session: Session }) {
  const [range, setRange] = useState('Last 24 hours');
  const r = RANGES[range] ?? { ms: 86_400_000, granularity: 'hour' };
  const graphs = useLoad(async () => {
    const to = new Date();
    const q = query({
      time_of_generation_min: new Date(to.getTime() - r.ms).toISOString(),
      time_of_generation_max: to.toISOString(),
      granularity: r.granularity,
    });
    return Promise.all(CHARTS.map((c) => api<Graph>('GET', `/v1/analytics/graphs/${c.graph}${q}`)));
  }, [range, session]);
  return (
    <section>
      <h1>Overview</h1>
      <div class="toolbar">
        <label for="range">Range</label>
        <select id="range" value={range} onChange={(e) => setRange((e.target as HTMLSelectElement).value)}>
          {Object.keys(RANGES).map((k) => (
            <option key={k}>{k}</option>
          ))}
        </select>
        <button type="button" onClick={graphs.reload}>
          Refresh
        </button>
      </div>
      <ErrorNote error={graphs.error} />
      <div class="charts" aria-busy={graphs.loading}>
        {graphs.data &&
          CHARTS.map((c, i) => {
            const g = graphs.data?.[i];
            if (!g) return null;
            const series: Series[] = c.keys.map((k) => ({ name: k, values: g.data_points.map((p) => num(p[k])) }));
            return (
              <LineChart
                key={c.graph}
                id={c.graph}
                title={c.title}
                total={c.total(g.summary)}
                times={g.data_points.map((p) => String(p.timestamp))}
                series={series}
              />
            );
          })}
      </div>
    </section>
  );
}
