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
  /** label shown when there are fewer than two points */
  emptyText?: string;
  ariaLabel: string;
}

function alpha(hex: string, a: number): string {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${a})`;
}

export function Chart({ times, series, height = 200, format = (v) => String(v), emptyText = 'Collecting samples…', ariaLabel }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => s.label + s.color).join('|');
  const fmt = useRef(format);
  fmt.current = format;

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height,
      padding: [8, 8, 0, 0],
      cursor: { drag: { x: false, y: false }, points: { size: 6 } },
      legend: { show: true, live: true },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: '#6b7280', grid: { stroke: '#eef0f3', width: 1 }, ticks: { stroke: '#e5e7eb', width: 1 }, font: '11px system-ui, sans-serif' },
        {
          stroke: '#6b7280',
          grid: { stroke: '#eef0f3', width: 1 },
          ticks: { show: false },
          font: '11px system-ui, sans-serif',
          size: 52,
          values: (_u, vals) => vals.map((v) => fmt.current(v)),
        },
      ],
      series: [
        { value: (_u, v) => (v == null ? '' : new Date(v * 1000).toLocaleTimeString('en-GB')) },
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          fill: s.fill ? alpha(s.color, 0.08) : undefined,
          points: { show: false },
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => (v == null ? '—' : fmt.current(v)),
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
    // re-create only when the series set or height changes; data flows through setData below
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, height]);

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
