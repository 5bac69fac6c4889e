// One dashboard panel: its data (an aggregation or a search, see
// usePanelData) over the dashboard's range, drawn as a time series, bars, a
// pie, a table or a single number. A bar, slice, row or time bucket drills
// down to Search (drill.ts); a split-by histogram draws one series per top
// value with a legend.
import type { Options, Series } from 'uplot';
import type { Panel as PanelDef } from '../../api/dashboards';
import type { AggregationResult, Bucket } from '../../api/types';
import { usePanelData, type PanelData, type SplitSeries } from '../../hooks/usePanelData';
import { compact, exact, getPath, valueText } from '../../lib/format';
import { navigate } from '../../lib/router';
import { formatTime, type TimeRange } from '../../lib/time';
import { Chart, barSeries, timeAxis, colour } from '../Chart/Chart';
import { ErrorBox } from '../ErrorBox/ErrorBox';
import { bucketTip } from '../Histogram/Histogram';
import { PieChart } from '../PieChart/PieChart';
import { bucketDrill, seriesDrill, termDrill } from './drill';

/** The first aggregation result of a panel's data. */
export function firstAgg(d: PanelData): AggregationResult | null {
  if (d.kind !== 'aggregate') return null;
  const k = Object.keys(d.result.aggs)[0];
  return k === undefined ? null : (d.result.aggs[k] ?? null);
}

/** The single number a `number` panel shows. */
export function panelNumber(p: PanelDef, d: PanelData): number | null {
  const a = firstAgg(d);
  if (a?.type === 'stats') return a[p.options.stat ?? 'avg'];
  if (a?.type === 'terms') return a.buckets.length;
  return d.result.total;
}

/** Rows of a table panel over an aggregation: `[label, value]`. */
export function panelRows(d: PanelData): [string, number][] {
  const a = firstAgg(d);
  if (!a) return [['count', d.result.total]];
  if (a.type === 'terms') {
    const rows: [string, number][] = a.buckets.map((b) => [String(b.key), b.count]);
    if (a.other > 0) rows.push(['(other)', a.other]);
    return rows;
  }
  if (a.type === 'date_histogram') return a.buckets.map((b) => [formatTime(Number(b.key)), b.count]);
  return (['count', 'min', 'max', 'avg', 'sum'] as const).map((k) => [k, a[k] ?? NaN]);
}

/** Props of the time charts. */
interface TimeSeriesProps {
  buckets: Bucket[];
  bars: boolean;
  title: string;
  /** A click on the bucket at `idx`. */
  onPick?: ((idx: number) => void) | undefined;
}

/** The options of a chart over time with these series (after the x one). */
function timeOptions(width: number, height: number, series: Series[]): Options {
  return { width, height, ms: 1, legend: { show: false }, scales: { x: { time: true } }, axes: [timeAxis(), { stroke: '#6b7280', size: 50 }], series: [{}, ...series] };
}

function TimeSeries({ buckets, bars, title, onPick }: TimeSeriesProps) {
  const options = (width: number, height: number): Options =>
    timeOptions(width, height, [
      bars ? barSeries(title, 0, [0.9, 64], 1) : { label: title, stroke: colour(0), fill: `${colour(0)}22`, width: 2, points: { show: false } },
    ]);
  return (
    <Chart
      options={options}
      optionsKey={bars ? 'tbars' : 'tline'}
      data={[buckets.map((b) => Number(b.key)), buckets.map((b) => b.count)]}
      height={160}
      label={`${title}: ${buckets.length} points`}
      noData
      tooltip={(i) => bucketTip(buckets[i])}
      onPick={onPick}
    />
  );
}

/** The values of `series` on the time axis `xs` (null where a series has no bucket). */
export function alignSeries(xs: number[], series: SplitSeries[]): (number | null)[][] {
  return series.map((s) => {
    const at = new Map(s.buckets.map((b) => [Number(b.key), b.count]));
    return xs.map((x) => at.get(x) ?? null);
  });
}

/** Events over time per value: one line per split-by value, a legend whose
 * entries drill down to that value's events. */
function SplitSeriesChart({ buckets, series, onPick, onSeries }: { buckets: Bucket[]; series: SplitSeries[]; onPick?: ((idx: number) => void) | undefined; onSeries?: ((value: string) => void) | undefined }) {
  const xs = buckets.map((b) => Number(b.key));
  const options = (width: number, height: number): Options =>
    timeOptions(width, height, series.map((s, i) => ({ label: s.value, stroke: colour(i), width: 2, points: { show: false } })));
  const ys = alignSeries(xs, series);
  return (
    <div class="split-series">
      <Chart
        options={options}
        optionsKey={`split-${series.map((s) => s.value).join('\u0000')}`}
        data={[xs, ...ys]}
        height={150}
        label={`${series.length} series: ${series.map((s) => s.value).join(', ')}`}
        noData
        tooltip={(i) => [formatTime(xs[i] ?? 0), ...series.map((s, j) => `${s.value}: ${exact(ys[j]?.[i] ?? 0)}`)].join(' · ')}
        onPick={onPick}
      />
      <ul class="legend split-legend">
        {series.map((s, i) => (
          <li key={s.value}>
            <span class="swatch" style={{ background: colour(i) }} />{' '}
            {onSeries ? (
              <button type="button" class="link drill" onClick={() => onSeries(s.value)}>
                {s.value}
              </button>
            ) : (
              s.value
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

function Bars({ buckets, title, onPick }: { buckets: Bucket[]; title: string; onPick?: ((idx: number) => void) | undefined }) {
  const labels = buckets.map((b) => String(b.key));
  const options = (width: number, height: number): Options => ({
    width,
    height,
    legend: { show: false },
    cursor: { show: false },
    scales: { x: { time: false, range: [-0.6, labels.length - 0.4] }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [
      { stroke: '#6b7280', splits: () => labels.map((_l, i) => i), values: (_u, splits) => splits.map((i) => (labels[i] ?? '').slice(0, 14)) },
      { stroke: '#6b7280', size: 50 },
    ],
    series: [{}, barSeries(title, 1, [0.7, 80])],
  });
  return (
    <Chart
      options={options}
      optionsKey={`bars-${labels.join('\u0000')}`}
      data={[labels.map((_l, i) => i), buckets.map((b) => b.count)]}
      height={160}
      label={`${title}: ${labels.map((l, i) => `${l} ${buckets[i]?.count ?? 0}`).join(', ')}`}
      noData
      tooltip={(i) => (buckets[i] ? `${String(buckets[i].key)}: ${exact(buckets[i].count)}` : '')}
      onPick={onPick}
    />
  );
}

/** Props of [`PanelBody`]. */
export interface PanelBodyProps {
  panel: PanelDef;
  data: PanelData;
  /** The dashboard's range; with `onDrill`, bars, slices, rows and buckets drill down to Search. */
  range?: TimeRange;
  /** Opens a Search URL. */
  onDrill?: (url: string) => void;
}

/** Draws a panel's data (no fetching: tests and previews use it directly). */
export function PanelBody({ panel, data, range, onDrill }: PanelBodyProps) {
  const a = firstAgg(data);
  const buckets = a && a.type !== 'stats' ? a.buckets : [];
  const drillable = range && onDrill ? { range, onDrill } : null;
  // The drill-down of the bucket at `i`: its value (terms) or its time (histogram).
  const drillUrl = (i: number, split?: { field: string; value: string }): string | null => {
    const b = buckets[i];
    if (!drillable || !b) return null;
    if (a?.type === 'date_histogram') return bucketDrill(panel, Number(b.key), a.interval_ms, split);
    return termDrill(panel, b.key, drillable.range);
  };
  const pick = drillable
    ? (i: number): void => {
        const url = drillUrl(i);
        if (url) drillable.onDrill(url);
      }
    : undefined;
  const split = data.kind === 'aggregate' ? data.split : undefined;
  const splitField = panel.options.split?.field;
  if (split && splitField && a?.type === 'date_histogram' && (panel.chart === 'timeseries' || panel.chart === 'bar')) {
    return (
      <SplitSeriesChart
        buckets={buckets}
        series={split}
        onPick={pick}
        onSeries={drillable ? (value) => drillable.onDrill(seriesDrill(panel, splitField, value, drillable.range)) : undefined}
      />
    );
  }
  switch (panel.chart) {
    case 'number': {
      const n = panelNumber(panel, data);
      return (
        <div class="big-number" data-value={n ?? ''}>
          {n === null ? '—' : compact(n)}
        </div>
      );
    }
    case 'pie':
      return <PieChart slices={buckets.map((b) => ({ label: String(b.key), value: b.count }))} onPick={pick} />;
    case 'table': {
      if (data.kind === 'search') {
        const cols = panel.fields && panel.fields.length > 0 ? panel.fields : ['message'];
        return (
          <table class="panel-table">
            <thead>
              <tr>
                <th scope="col">Time</th>
                {cols.map((c) => (
                  <th scope="col" key={c}>
                    {c}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {data.result.hits.map((h) => (
                <tr key={h.id}>
                  <td class="nowrap">{formatTime(Date.parse(String(h.event['@timestamp'] ?? '')))}</td>
                  {cols.map((c) => (
                    <td key={c}>{valueText(getPath(h.event, c))}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        );
      }
      return (
        <table class="panel-table">
          <tbody>
            {panelRows(data).map(([k, v], i) => (
              <tr key={k}>
                <th scope="row">{drillUrl(i) !== null && pick ? <button type="button" class="link drill" onClick={() => pick(i)}>{k}</button> : k}</th>
                <td>{Number.isFinite(v) ? compact(v) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      );
    }
    case 'bar':
      return a?.type === 'date_histogram' ? <TimeSeries buckets={buckets} bars title={panel.title} onPick={pick} /> : <Bars buckets={buckets} title={panel.title} onPick={pick} />;
    case 'timeseries':
      return <TimeSeries buckets={buckets} bars={false} title={panel.title} onPick={pick} />;
  }
}

/** Props of [`PanelView`]. */
export interface PanelViewProps {
  panel: PanelDef;
  range: TimeRange;
  /** Bumped by auto-refresh. */
  refresh: number;
}

/** A panel that fetches its own data. */
export function PanelView({ panel, range, refresh }: PanelViewProps) {
  const { data, error, loading } = usePanelData(panel, range, refresh);
  return (
    <div class="panel-body" aria-busy={loading} data-total={data?.result.total ?? ''}>
      <ErrorBox error={error} />
      {data ? <PanelBody panel={panel} data={data} range={range} onDrill={(url) => navigate(url)} /> : loading ? <p class="muted">Loading…</p> : null}
    </div>
  );
}
