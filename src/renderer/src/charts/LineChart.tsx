// Throughput over time, one line per configuration (SVG at the element's width, nice ticks).

import { useWidth } from './useWidth';

export interface Series {
  label: string;
  series: number;
  /** [ms, value] */
  points: readonly [number, number][];
}

const H = 220;
const M = { left: 52, right: 12, top: 12, bottom: 30 };

export function niceTicks(max: number, count = 4): number[] {
  if (!(max > 0)) return [0];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw)!;
  const ticks: number[] = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks[ticks.length - 1]! < max) ticks.push(Number((ticks[ticks.length - 1]! + step).toPrecision(12)));
  return ticks;
}

export function LineChart({
  title,
  series,
  yUnit,
  yFormat,
}: {
  title: string;
  series: Series[];
  yUnit: string;
  yFormat: (v: number) => string;
}) {
  const [ref, W] = useWidth<HTMLElement>(640);
  let maxX = 0;
  let maxY = 0;
  for (const s of series) {
    for (const [x, y] of s.points) {
      if (x > maxX) maxX = x;
      if (y > maxY) maxY = y;
    }
  }
  const xTicks = niceTicks(maxX / 1000, 5);
  const yTicks = niceTicks(maxY, 4);
  const xMax = xTicks[xTicks.length - 1]! * 1000 || 1;
  const yMax = yTicks[yTicks.length - 1]! || 1;
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const sx = (x: number) => M.left + (x / xMax) * pw;
  const sy = (y: number) => M.top + ph - (y / yMax) * ph;
  const empty = series.every((s) => s.points.length === 0);
  return (
    <figure className="chart line-chart" ref={ref}>
      <figcaption>{title}</figcaption>
      {empty ? (
        <p className="chart-empty">No throughput samples yet.</p>
      ) : (
        <svg
          viewBox={`0 0 ${W} ${H}`}
          width={W}
          height={H}
          role="img"
          aria-label={`${title}: ${series.map((s) => s.label).join(', ')}`}
        >
          {yTicks.map((t) => (
            <g key={`y${t}`}>
              <line x1={M.left} x2={W - M.right} y1={sy(t)} y2={sy(t)} className="grid" />
              <text
                x={M.left - 6}
                y={sy(t)}
                textAnchor="end"
                dominantBaseline="central"
                className="axis-label"
              >
                {yFormat(t)}
              </text>
            </g>
          ))}
          {xTicks.map((t) => (
            <text
              key={`x${t}`}
              x={sx(t * 1000)}
              y={H - M.bottom + 16}
              textAnchor="middle"
              className="axis-label"
            >
              {t} s
            </text>
          ))}
          <text
            x={12}
            y={M.top + ph / 2}
            className="axis-title"
            textAnchor="middle"
            transform={`rotate(-90 12 ${M.top + ph / 2})`}
          >
            {yUnit}
          </text>
          {series.map((s, i) =>
            s.points.length ? (
              <polyline
                key={i}
                className={`series-line series-${(s.series % 8) + 1}`}
                points={s.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ')}
              >
                <title>{s.label}</title>
              </polyline>
            ) : null,
          )}
        </svg>
      )}
      <ul className="legend">
        {series.map((s, i) => (
          <li key={i}>
            <span className={`swatch series-${(s.series % 8) + 1}`} aria-hidden="true" />
            {s.label}
          </li>
        ))}
      </ul>
    </figure>
  );
}
