// Horizontal bar chart in SVG: one bar per configuration, labelled, scaled to the largest value.
// The numbers are also in the table under the charts (the accessible equivalent).

export interface Bar {
  label: string;
  value: number | undefined;
  series: number;
}

const WIDTH = 460;
const ROW = 24;
const LABEL_W = 190;
const VALUE_W = 64;
const PAD_TOP = 6;

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

export function BarChart({ title, bars, format, better }: { title: string; bars: Bar[]; format: (v: number) => string; better: 'lower' | 'higher' }) {
  const values = bars.map((b) => b.value).filter((v): v is number => v !== undefined && Number.isFinite(v));
  const max = values.length ? Math.max(...values) : 0;
  const best = values.length ? (better === 'lower' ? Math.min(...values) : Math.max(...values)) : undefined;
  const plotW = WIDTH - LABEL_W - VALUE_W - 8;
  const height = PAD_TOP * 2 + bars.length * ROW;
  const summary = bars.map((b) => `${b.label}: ${b.value === undefined ? 'no result' : format(b.value)}`).join('; ');
  return (
    <figure className="chart bar-chart">
      <figcaption>
        {title} <span className="muted">({better} is better)</span>
      </figcaption>
      <svg viewBox={`0 0 ${WIDTH} ${height}`} width="100%" role="img" aria-label={`${title}. ${summary}`} preserveAspectRatio="xMinYMin meet">
        {bars.map((b, i) => {
          const y = PAD_TOP + i * ROW;
          const w = b.value !== undefined && max > 0 ? Math.max(1.5, (b.value / max) * plotW) : 0;
          const isBest = b.value !== undefined && b.value === best && values.length > 1;
          return (
            <g key={i}>
              <title>{`${b.label}: ${b.value === undefined ? 'no result' : format(b.value)}`}</title>
              <text x={LABEL_W - 8} y={y + ROW / 2} className="chart-label" textAnchor="end" dominantBaseline="central">
                {truncate(b.label, 32)}
              </text>
              <rect x={LABEL_W} y={y + 4} width={plotW} height={ROW - 8} className="bar-track" rx={3} />
              {w > 0 ? <rect x={LABEL_W} y={y + 4} width={w} height={ROW - 8} className={`bar series-${(b.series % 8) + 1}`} rx={3} /> : null}
              <text x={LABEL_W + plotW + 6} y={y + ROW / 2} className={`chart-value${isBest ? ' best' : ''}`} dominantBaseline="central">
                {b.value === undefined ? '–' : format(b.value)}
              </text>
            </g>
          );
        })}
      </svg>
    </figure>
  );
}
