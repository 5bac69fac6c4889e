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

/** `GET /api/v1/fields`. */
export async function fields(signal?: AbortSignal): Promise<FieldInfo[]> {
  const r = await request<{ fields: FieldInfo[] }>('GET', '/api/v1/fields', undefined, signal);
  return r.fields;
}

/** The URL of `GET /api/v1/tail` for a query (read with [`./sse`]). */
export function tailUrl(query: string): string {
  return `/api/v1/tail?${new URLSearchParams({ query }).toString()}`;
}
