// Bar chart in SVG, drawn at the element's real width: one row per configuration with its label
// above the bar and the value at the bar's end, scaled to the largest value. The numbers are also
// in the table under the charts (the accessible equivalent).

import { useWidth } from './useWidth';

export interface Bar {
  label: string;
  value: number | undefined;
  series: number;
}

const ROW = 36;
const BAR_H = 12;
const VALUE_W = 92;

export function BarChart({
  title,
  bars,
  format,
  better,
}: {
  title: string;
  bars: Bar[];
  format: (v: number) => string;
  better: 'lower' | 'higher';
}) {
  const [ref, width] = useWidth<HTMLElement>();
  const values = bars.map((b) => b.value).filter((v): v is number => v !== undefined && Number.isFinite(v));
  const max = values.length ? Math.max(...values) : 0;
  const min = values.length ? Math.min(...values) : 0;
  // a winner only when the spread is beyond measurement noise (1 %)
  const distinct = values.length > 1 && max > 0 && (max - min) / max > 0.01;
  const best = better === 'lower' ? min : max;
  const plotW = Math.max(40, width - VALUE_W);
  const height = bars.length * ROW + 4;
  const summary = bars
    .map((b) => `${b.label}: ${b.value === undefined ? 'no result' : format(b.value)}`)
    .join('; ');
  const maxChars = Math.max(12, Math.floor(width / 6.2));
  return (
    <figure className="chart bar-chart" ref={ref}>
      <figcaption>
        {title} <span className="muted">({better} is better)</span>
      </figcaption>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
        role="img"
        aria-label={`${title}. ${summary}`}
      >
        {bars.map((b, i) => {
          const y = i * ROW;
          const w = b.value !== undefined && max > 0 ? Math.max(2, (b.value / max) * plotW) : 0;
          const isBest = distinct && b.value === best;
          const label = b.label.length > maxChars ? `${b.label.slice(0, maxChars - 1)}…` : b.label;
          return (
            <g key={i}>
              <title>{`${b.label}: ${b.value === undefined ? 'no result' : format(b.value)}`}</title>
              <text x={0} y={y + 12} className="chart-label">
                {label}
              </text>
              <rect x={0} y={y + 18} width={plotW} height={BAR_H} className="bar-track" rx={3} />
              {w > 0 ? (
                <rect
                  x={0}
                  y={y + 18}
                  width={w}
                  height={BAR_H}
                  className={`bar series-${(b.series % 8) + 1}`}
                  rx={3}
                />
              ) : null}
              <text
                x={plotW + 8}
                y={y + 18 + BAR_H / 2}
                className={`chart-value${isBest ? ' best' : ''}`}
                dominantBaseline="central"
              >
                {b.value === undefined ? '–' : format(b.value)}
                {isBest ? ' ★' : ''}
              </text>
            </g>
          );
        })}
      </svg>
    </figure>
  );
}
