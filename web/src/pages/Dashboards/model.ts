// The panel editor's model: a draft of one panel (title, query, chart,
// metric, field, size, statistic), and its conversion to and from the
// dashboard API's panel; which charts each metric can draw.
import { newPanelId, type ChartType, type DashboardBody, type Metric, type Panel, type Stat } from '../../api/dashboards';
import type { Aggregation } from '../../api/types';

/** What the panel editor edits. */
export interface PanelDraft {
  title: string;
  query: string;
  chart: ChartType;
  metric: Metric;
  field: string;
  size: number;
  stat: Stat;
  /** Histogram: one series per top value of this field ('' for one series). */
  split?: string;
}

/** The panel a draft describes (keeps `id` and `layout` of `base`). */
export function panelFromDraft(d: PanelDraft, base: Pick<Panel, 'id' | 'layout'>): Panel {
  const p: Panel = { id: base.id, layout: base.layout, title: d.title || 'Untitled', query: d.query, chart: d.chart, options: { metric: d.metric } };
  let agg: Aggregation | null = null;
  switch (d.metric) {
    case 'count':
      p.size = 1;
      break;
    case 'events':
      p.size = Math.min(1000, Math.max(1, d.size));
      if (d.field) p.fields = d.field.split(',').map((f) => f.trim()).filter(Boolean);
      break;
    case 'histogram':
      agg = { type: 'date_histogram', buckets: 60 };
      if (d.split) p.options.split = { field: d.split, size: Math.min(MAX_SPLIT, Math.max(1, d.size)) };
      break;
    case 'terms':
      agg = { type: 'terms', field: d.field, size: Math.max(1, d.size) };
      break;
    case 'stats':
      agg = { type: 'stats', field: d.field };
      p.options.stat = d.stat;
      break;
  }
  if (agg) p.aggs = { a: agg };
  return p;
}

/** The draft of an existing panel. */
export function draftOf(p: Panel): PanelDraft {
  const a = p.aggs ? Object.values(p.aggs)[0] : undefined;
  const metric: Metric =
    p.options.metric ?? (a?.type === 'date_histogram' ? 'histogram' : a?.type === 'terms' ? 'terms' : a?.type === 'stats' ? 'stats' : p.size === 1 ? 'count' : 'events');
  return {
    title: p.title,
    query: p.query,
    chart: p.chart,
    metric,
    field: a && 'field' in a ? a.field : (p.fields ?? []).join(','),
    size: a?.type === 'terms' ? (a.size ?? 10) : (p.size ?? 50),
    stat: p.options.stat ?? 'avg',
    ...(p.options.split ? { split: p.options.split.field, size: p.options.split.size } : {}),
  };
}

/** Most series a split-by histogram draws. */
export const MAX_SPLIT = 10;

/** Charts that can draw a metric. */
export const CHARTS_FOR: Record<Metric, ChartType[]> = {
  count: ['number'],
  histogram: ['timeseries', 'bar', 'table'],
  terms: ['bar', 'pie', 'table', 'number'],
  stats: ['number', 'table'],
  events: ['table', 'number'],
};

export const METRIC_LABEL: Record<Metric, string> = {
  count: 'Count of events',
  histogram: 'Events over time',
  terms: 'Top values of a field',
  stats: 'Statistic of a numeric field',
  events: 'Latest events',
};

/** A new private dashboard with one bar panel of a field's top values in a
 * search ("visualize this field" in the field list, issue 22). */
export function fieldDashboard(field: string, query: string, range: { from: string; to: string }): DashboardBody {
  const panel = panelFromDraft(
    { title: `Top ${field}`, query, chart: 'bar', metric: 'terms', field, size: 10, stat: 'avg' },
    { id: newPanelId(), layout: { x: 0, y: 0, w: 6, h: 3 } },
  );
  return {
    title: `${field}: top values`,
    description: query ? `From the search ${query}` : '',
    sharing: { everyone: false, groups: [] },
    time: { from: range.from, to: range.to === 'now' ? null : range.to },
    refresh: null,
    panels: [panel],
  };
}
