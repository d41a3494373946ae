/** A small SVG line chart: no chart library, a data table behind it for screen readers. */

export interface Series {
  name: string;
  values: number[];
}

const W = 320;
const H = 120;
const PAD = 24;
// Colours come from classes (s0..s3) in the stylesheet: a strict CSP allows no inline style.
const SERIES_CLASSES = 4;

function path(values: number[], max: number): string {
  const step = values.length > 1 ? (W - PAD * 2) / (values.length - 1) : 0;
  return values
    .map((v, i) => {
      const x = PAD + i * step;
      const y = H - PAD - (max > 0 ? (v / max) * (H - PAD * 2) : 0);
      return `${i ? 'L' : 'M'}${x.toFixed(1)},${y.toFixed(1)}`;
    })
    .join(' ');
}

const label = (t: string) => t.slice(5, 16).replace('T', ' ');

export function LineChart({ title, total, times, series, id }: { title: string; total: string; times: string[]; series: Series[]; id: string }) {
  const max = Math.max(0, ...series.flatMap((s) => s.values));
  return (
    <figure class="chart" data-chart={id}>
      <figcaption>
        <span>{title}</span> <strong data-total>{total}</strong>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${title}: ${total}`}>
        <line x1={PAD} y1={H - PAD} x2={W - PAD} y2={H - PAD} class="axis" />
        <text x={PAD} y={14} class="tick">
          {max}
        </text>
        {times.length > 0 && (
          <>
            <text x={PAD} y={H - 6} class="tick">
              {label(times[0] ?? '')}
            </text>
            <text x={W - PAD} y={H - 6} class="tick" text-anchor="end">
              {label(times[times.length - 1] ?? '')}
            </text>
          </>
        )}
        {series.map((s, i) => (
          <path key={s.name} d={path(s.values, max)} class={`line s${i % SERIES_CLASSES}`} data-series={s.name} data-points={s.values.join(',')} />
        ))}
      </svg>
      {series.length > 1 && (
        <p class="legend">
          {series.map((s, i) => (
            <span key={s.name} class={`s${i % SERIES_CLASSES}`}>
              ■ {s.name}{' '}
            </span>
          ))}
        </p>
      )}
    </figure>
  );
}
