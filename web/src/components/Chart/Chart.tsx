// A uPlot chart that fills its container's width: created when `options`
// change (compare by `optionsKey`), fed new data with `setData`, resized with
// its container, destroyed on unmount.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot, { type AlignedData, type Axis, type Options, type Series } from 'uplot';
import { axisLabel } from '../../lib/time';
import 'uplot/dist/uPlot.min.css';

/** Props of [`Chart`]. */
export interface ChartProps {
  /** Builds the options for a width and height. */
  options: (width: number, height: number) => Options;
  /** Changes when `options` would build different options. */
  optionsKey: string;
  data: AlignedData;
  height: number;
  /** Accessible description of what the chart shows. */
  label: string;
  /** Say "No data" over the chart when every value is 0 or missing (not
   * for rates, where 0 is a value). */
  noData?: boolean;
  /** The text shown by the cursor for the point at `idx` (none without). */
  tooltip?: (idx: number) => string;
  /** A click on the plot picks the point at `idx` (drill-down). */
  onPick?: ((idx: number) => void) | undefined;
}

/** Where the cursor's tooltip is, and what it says. */
interface Tip {
  left: number;
  top: number;
  text: string;
}

/** Whether aligned data has no series value other than 0 or null. */
export function isEmpty(data: AlignedData): boolean {
  return data.slice(1).every((series) => Array.from(series as ArrayLike<number | null | undefined>).every((v) => v === null || v === undefined || v === 0));
}

/** The chart. */
export function Chart({ options, optionsKey, data, height, label, noData = false, tooltip, onPick }: ChartProps) {
  const [tip, setTip] = useState<Tip | null>(null);
  const tipRef = useRef(tooltip);
  tipRef.current = tooltip;
  const pickRef = useRef(onPick);
  pickRef.current = onPick;
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const dataRef = useRef(data);
  dataRef.current = data;
  const optsRef = useRef(options);
  optsRef.current = options;

  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const width = Math.max(100, el.clientWidth);
    const opts = optsRef.current(width, height);
    // The tooltip follows the cursor's point (uPlot's setCursor hook).
    opts.hooks = {
      ...opts.hooks,
      setCursor: [
        ...(opts.hooks?.setCursor ?? []),
        (u: uPlot) => {
          const idx = u.cursor.idx;
          const text = idx === null || idx === undefined || !tipRef.current ? null : tipRef.current(idx);
          setTip(text ? { left: (u.cursor.left ?? 0) + u.over.offsetLeft, top: (u.cursor.top ?? 0) + u.over.offsetTop, text } : null);
        },
      ],
    };
    const u = new uPlot(opts, dataRef.current, el);
    plot.current = u;
    const pick = (e: MouseEvent): void => {
      const idx = u.posToIdx(e.offsetX);
      if (pickRef.current && idx >= 0 && idx < (dataRef.current[0]?.length ?? 0)) pickRef.current(idx);
    };
    u.over.addEventListener('click', pick);
    const ro = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => {
      const w = Math.max(100, el.clientWidth);
      if (Math.abs(w - u.width) > 1) u.setSize({ width: w, height });
    });
    ro?.observe(el);
    return () => {
      ro?.disconnect();
      u.over.removeEventListener('click', pick);
      u.destroy();
      plot.current = null;
    };
  }, [optionsKey, height]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  return (
    <div class={onPick ? 'chart-box pickable' : 'chart-box'}>
      <div class="chart" ref={box} role="img" aria-label={label} style={{ minHeight: `${height}px` }} />
      {noData && isEmpty(data) ? <p class="no-data">No data</p> : null}
      {tip ? (
        <div class="chart-tip" role="tooltip" style={{ left: `${tip.left + 12}px`, top: `${tip.top + 12}px` }}>
          {tip.text}
        </div>
      ) : null}
    </div>
  );
}

/** The series colours, in order. */
export const PALETTE = ['#2563eb', '#16a34a', '#dc2626', '#ca8a04', '#9333ea', '#0891b2', '#ea580c', '#4b5563'];

/** A colour of the palette by index (wrapping). */
export function colour(i: number): string {
  return PALETTE[i % PALETTE.length] ?? '#2563eb';
}

/** The x axis of a time chart: 24-hour ticks in the chosen zone (uPlot's
 * own are 12-hour, local). */
export function timeAxis(): Axis {
  return { stroke: '#6b7280', values: (_u, splits, _ai, _space, incr) => splits.map((v) => axisLabel(v, incr)) };
}

/** A bar series (uPlot's bars path builder). */
export function barSeries(label: string, colourIndex: number, size: [number, number], align?: -1 | 0 | 1): Series {
  const s: Series = { label, fill: `${colour(colourIndex)}cc`, stroke: colour(colourIndex), points: { show: false } };
  const bars = uPlot.paths.bars;
  if (bars) s.paths = bars(align === undefined ? { size } : { size, align });
  return s;
}
