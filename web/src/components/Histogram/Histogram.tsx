// Hits over time as bars; click-drag selects a time range to zoom into.
import { useMemo, useRef } from 'preact/hooks';
import type { AlignedData, Options } from 'uplot';
import type { Bucket } from '../../api/types';
import { exact } from '../../lib/format';
import { formatTime } from '../../lib/time';
import { Chart, barSeries, timeAxis } from '../Chart/Chart';

/** Props of [`Histogram`]. */
export interface HistogramProps {
  buckets: Bucket[];
  intervalMs: number;
  /** A click-drag selected `[fromMs, toMs)`. */
  onSelect?: (fromMs: number, toMs: number) => void;
  height?: number;
}

/** uPlot data of histogram buckets: x = bucket start (ms), y = count. */
export function histogramData(buckets: Bucket[]): AlignedData {
  return [buckets.map((b) => Number(b.key)), buckets.map((b) => b.count)];
}

/** The selected range of a drag, snapped outwards to whole buckets. */
export function snapSelection(fromMs: number, toMs: number, intervalMs: number): [number, number] {
  if (intervalMs <= 0) return [fromMs, toMs];
  const f = Math.floor(fromMs / intervalMs) * intervalMs;
  const t = Math.ceil(toMs / intervalMs) * intervalMs;
  return [f, t > f ? t : f + intervalMs];
}

/**
 * The x range: from the first bucket's start to the end of the last one. A
 * bar is drawn from its bucket's start to the right, so uPlot's default (the
 * last bucket's *start*) clipped the newest bucket — where fresh events are.
 */
export function xRange(min: number | null, max: number | null, intervalMs: number): [number | null, number | null] {
  if (min === null || max === null) return [min, max];
  return [min, max + Math.max(intervalMs, 1)];
}

/** `2026-11-26 22:51:00.000 UTC — 12 hits` for a bucket. */
export function bucketTip(b: Bucket | undefined): string {
  return b ? `${formatTime(Number(b.key))} — ${exact(b.count)} ${b.count === 1 ? 'hit' : 'hits'}` : '';
}

/** The histogram. */
export function Histogram({ buckets, intervalMs, onSelect, height = 120 }: HistogramProps) {
  const data = useMemo(() => histogramData(buckets), [buckets]);
  const total = buckets.reduce((n, b) => n + b.count, 0);
  // The chart is built once per interval (`optionsKey`), so its hook calls
  // the newest `onSelect` through a ref: a closure captured at build time
  // would zoom into the query and columns the page had back then.
  const select = useRef(onSelect);
  select.current = onSelect;
  const options = (width: number, h: number): Options => ({
    width,
    height: h,
    ms: 1,
    legend: { show: false },
    cursor: { drag: { x: true, y: false, setScale: false } },
    scales: { x: { time: true, range: (_u, min, max) => xRange(min, max, intervalMs) } },
    axes: [timeAxis(), { stroke: '#6b7280', size: 50 }],
    series: [
      {},
      barSeries('hits', 0, [0.9, 64], 1),
    ],
    hooks: {
      setSelect: [
        (u) => {
          const onSel = select.current;
          if (u.select.width < 3 || !onSel) return;
          const f = u.posToVal(u.select.left, 'x');
          const t = u.posToVal(u.select.left + u.select.width, 'x');
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          const [sf, st] = snapSelection(f, t, intervalMs);
          onSel(sf, st);
        },
      ],
    },
  });
  return (
    <div class="histogram" data-total={total} data-buckets={buckets.length}>
      <Chart
        options={options}
        optionsKey={`hist-${intervalMs}`}
        data={data}
        height={height}
        label={`Histogram of ${total} hits in ${buckets.length} buckets; drag to zoom`}
        noData
        tooltip={(i) => bucketTip(buckets[i])}
      />
    </div>
  );
}
