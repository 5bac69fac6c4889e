// A dashboard panel's data: `POST /api/v1/aggregate` for a panel with
// `aggs`, `POST /api/v1/search` for one without (latest events, a count),
// always as the viewer — re-run on range or refresh changes. A split-by
// histogram (`options.split`) asks once for the histogram and the field's
// top values, then once per value for its histogram.
import type { Panel } from '../api/dashboards';
import { aggregate, search } from '../api/search';
import type { AggregateRequest, AggregateResponse, Bucket, SearchRequest, SearchResponse } from '../api/types';
import { addFilter, filterText } from '../lib/query';
import type { TimeRange } from '../lib/time';
import { useRequest, type RequestState } from './useRequest';

/** One series of a split-by histogram: a value and its buckets. */
export interface SplitSeries {
  value: string;
  buckets: Bucket[];
}

/** A panel's result (`split`: the series of a split-by histogram). */
export type PanelData = { kind: 'aggregate'; result: AggregateResponse; split?: SplitSeries[] } | { kind: 'search'; result: SearchResponse };

/** The first request of a split-by histogram: the histogram and the top values. */
export function splitRequest(p: Panel, range: TimeRange, split: { field: string; size: number }): AggregateRequest {
  return {
    query: p.query,
    from: range.from,
    to: range.to,
    aggs: { a: { type: 'date_histogram', buckets: 60 }, values: { type: 'terms', field: split.field, size: split.size } },
  };
}

/** The histogram request of one value of a split-by histogram. */
export function seriesRequest(p: Panel, range: TimeRange, field: string, value: string): AggregateRequest {
  return { query: addFilter(p.query, field, value), from: range.from, to: range.to, aggs: { a: { type: 'date_histogram', buckets: 60 } } };
}

/** Runs a split-by histogram (see the module comment). */
async function runSplit(p: Panel, range: TimeRange, split: { field: string; size: number }, signal: AbortSignal): Promise<PanelData> {
  const first = await aggregate(splitRequest(p, range, split), signal);
  const top = first.aggs['values'];
  const values = top?.type === 'terms' ? top.buckets.map((b) => filterText(b.key)).filter((v): v is string => v !== null) : [];
  const series = await Promise.all(
    values.map(async (value): Promise<SplitSeries> => {
      const r = await aggregate(seriesRequest(p, range, split.field, value), signal);
      const h = r.aggs['a'];
      return { value, buckets: h?.type === 'date_histogram' ? h.buckets : [] };
    }),
  );
  return { kind: 'aggregate', result: first, split: series };
}

/** The request a panel sends. */
export function panelRequest(p: Panel, range: TimeRange): { kind: 'aggregate'; req: AggregateRequest } | { kind: 'search'; req: SearchRequest } {
  if (p.aggs && Object.keys(p.aggs).length > 0) {
    return { kind: 'aggregate', req: { query: p.query, from: range.from, to: range.to, aggs: p.aggs } };
  }
  const req: SearchRequest = { query: p.query, from: range.from, to: range.to, size: p.size ?? 50 };
  if (p.fields && p.fields.length > 0) req.fields = p.fields;
  return { kind: 'search', req };
}

/** Runs a panel. */
export function usePanelData(p: Panel, range: TimeRange, refresh: number): RequestState<PanelData> {
  const r = panelRequest(p, range);
  const split = p.options.split && p.options.split.field ? p.options.split : null;
  return useRequest(`${JSON.stringify(r)}#${JSON.stringify(split)}#${refresh}`, async (signal): Promise<PanelData> => {
    if (split) return runSplit(p, range, split, signal);
    return r.kind === 'aggregate' ? { kind: 'aggregate', result: await aggregate(r.req, signal) } : { kind: 'search', result: await search(r.req, signal) };
  });
}
