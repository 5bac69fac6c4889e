// A dashboard panel's data: `POST /api/v1/aggregate` for a panel with
// `aggs`, `POST /api/v1/search` for one without (latest events, a count),
// always as the viewer — re-run on range or refresh changes.
import type { Panel } from '../api/dashboards';
import { aggregate, search } from '../api/search';
import type { AggregateRequest, AggregateResponse, SearchRequest, SearchResponse } from '../api/types';
import type { TimeRange } from '../lib/time';
import { useRequest, type RequestState } from './useRequest';

/** A panel's result. */
export type PanelData = { kind: 'aggregate'; result: AggregateResponse } | { kind: 'search'; result: SearchResponse };

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
  return useRequest(`${JSON.stringify(r)}#${refresh}`, async (signal): Promise<PanelData> =>
    r.kind === 'aggregate' ? { kind: 'aggregate', result: await aggregate(r.req, signal) } : { kind: 'search', result: await search(r.req, signal) },
  );
}
