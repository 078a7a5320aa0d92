/** A uPlot time-series chart that follows its container's width. */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  color: string;
  /** fill under the line */
  fill?: boolean;
  values: (number | null)[];
}

export interface ChartProps {
  /** unix seconds */
  times: number[];
  series: Series[];
  height?: number;
  /** formats y values (axis and legend) */
  format?: (v: number) => string;
  /** fixed time window (unix seconds); default: the data's own span, at least 20 s */
  xRange?: [number, number];
  /** counts rather than rates: integer ticks */
  integer?: boolean;
  /** label shown when there are fewer than two points */
  emptyText?: string;
  ariaLabel: string;
}

/** HH:MM (or HH:MM:SS) in local time. */
function clock(sec: number, seconds: boolean): string {
  return new Date(sec * 1000).toLocaleTimeString('en-GB', seconds ? { hour: '2-digit', minute: '2-digit', second: '2-digit' } : { hour: '2-digit', minute: '2-digit' });
}

/** Axis tick: integers compact, fractions with at most two decimals. */
function tick(v: number): string {
  if (Number.isInteger(v)) return Math.abs(v) >= 10_000 ? `${+(v / 1000).toFixed(1)}k` : String(v);
  return String(+v.toFixed(Math.abs(v) < 1 ? 2 : 1));
}

function niceMax(max: number | null, integer: boolean): number {
  if (max == null || !(max > 0)) return integer ? 5 : 1;
  const m = max * 1.15;
  return integer ? Math.max(5, Math.ceil(m)) : Math.max(integer ? 5 : 0.5, m);
}

function alpha(hex: string, a: number): string {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${a})`;
}

export function Chart({ times, series, height = 200, format = (v) => String(v), integer = false, xRange, emptyText = 'Collecting samples…', ariaLabel }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => s.label + s.color).join('|');
  const fmt = useRef(format);
  fmt.current = format;
  const xr = useRef(xRange);
  xr.current = xRange;

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const latest = (u: uPlot, sidx: number): number | null => {
      const d = u.data[sidx] as (number | null)[];
      for (let i = d.length - 1; i >= 0; i--) if (d[i] != null) return d[i] as number;
      return null;
    };
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height,
      padding: [10, 12, 0, 0],
      cursor: { drag: { x: false, y: false }, points: { size: 6 } },
      legend: { show: true, live: true },
      scales: {
        // at least 20 s wide, so a fresh page never shows sub-second ticks
        x: {
          time: true,
          range: (_u, min, max) =>
            xr.current ?? (min == null || max == null ? [Date.now() / 1000 - 60, Date.now() / 1000] : [Math.min(min, max - 20), max]),
        },
        y: { range: (_u, _min, max) => [0, niceMax(max, integer)] },
      },
      axes: [
        {
          stroke: '#667085',
          grid: { stroke: '#eef0f3', width: 1 },
          ticks: { stroke: '#e4e7ec', width: 1, size: 4 },
          font: '11px system-ui, sans-serif',
          space: 70,
          // whole seconds at least; HH:MM:SS only while ticks are less than a minute apart
          incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200],
          values: (_u, splits) => {
            const step = splits.length > 1 ? splits[1]! - splits[0]! : 60;
            return splits.map((v) => clock(v, step < 60));
          },
        },
        {
          stroke: '#667085',
          grid: { stroke: '#eef0f3', width: 1 },
          ticks: { show: false },
          font: '11px system-ui, sans-serif',
          size: 48,
          space: 28,
          incrs: integer ? [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e8, 1e9] : undefined,
          values: (_u, vals) => vals.map(tick),
        },
      ],
      series: [
        { label: 'Time', value: (_u, v, _s, idx) => (idx == null || v == null ? 'latest' : clock(v, true)) },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          fill: s.fill ? alpha(s.color, 0.08) : undefined,
          spanGaps: false,
          value: (u: uPlot, v: number | null, _s: number, idx: number | null) => {
            const x = idx == null ? latest(u, i + 1) : v;
            return x == null ? '—' : fmt.current(x);
          },
        })),
      ],
    };
    const u = new uPlot(opts, [times, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    plot.current = u;
    const ro = new ResizeObserver(() => {
      const w = Math.max(200, el.clientWidth);
      if (Math.abs(w - u.width) > 1) u.setSize({ width: w, height });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // re-created only when the series set or height changes; data flows through setData below
  }, [shape, height, integer]);

  useEffect(() => {
    plot.current?.setData([times, ...series.map((s) => s.values)] as uPlot.AlignedData);
  });

  const enough = times.length >= 2;
  return (
    <div class="chart" role="img" aria-label={ariaLabel}>
      <div ref={box} class={enough ? '' : 'chart-dim'} />
      {!enough && <div class="chart-empty">{emptyText}</div>}
    </div>
  );
}
