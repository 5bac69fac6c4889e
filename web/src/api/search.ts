// The search endpoints, one function each (crates/api/src/search.rs).
import { request } from './client';
import type { AggregateRequest, AggregateResponse, FieldInfo, SearchRequest, SearchResponse } from './types';

/** `POST /api/v1/search`. */
export function search(req: SearchRequest, signal?: AbortSignal): Promise<SearchResponse> {
  return request<SearchResponse>('POST', '/api/v1/search', req, signal);
}

/** `POST /api/v1/aggregate`. */
export function aggregate(req: AggregateRequest, signal?: AbortSignal): Promise<AggregateResponse> {
  return request<AggregateResponse>('POST', '/api/v1/aggregate', req, signal);
}

/** `GET /api/v1/fields?from=…&to=…`: the fields of the caller's events in
 * the range (all of them without one). */
export async function fields(range: { from: string; to: string } | null, signal?: AbortSignal): Promise<FieldInfo[]> {
  const q = range ? `?${new URLSearchParams({ from: range.from, to: range.to }).toString()}` : '';
  const r = await request<{ fields: FieldInfo[] }>('GET', `/api/v1/fields${q}`, undefined, signal);
  return r.fields;
}

/** The URL of `GET /api/v1/tail` for a query (read with [`./sse`]). */
export function tailUrl(query: string): string {
  return `/api/v1/tail?${new URLSearchParams({ query }).toString()}`;
}
