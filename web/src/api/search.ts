// The search endpoints, one function each (crates/api/src/search.rs).
import { request } from './client';
import type { AggregateRequest, AggregateResponse, FieldInfo, Hit, SearchRequest, SearchResponse } from './types';

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

/** What `GET /api/v1/export` takes (docs/specs/ui-api.md §8). */
export interface ExportRequest {
  query: string;
  from: string;
  to: string;
  format: 'csv' | 'ndjson';
  /** CSV columns (the server's default set when empty); ignored for ndjson. */
  columns: string[];
  /** `oldest` first (newest when absent). */
  order?: 'newest' | 'oldest';
  /** By a field: `field:asc|desc` (as in search). */
  sort?: string | null;
}

/** Hits an export writes when it names no `limit` (the server's default). */
export const EXPORT_LIMIT = 10_000;

/** The URL of `GET /api/v1/export` for the current search. */
export function exportUrl(r: ExportRequest): string {
  const p: Record<string, string> = { query: r.query, from: r.from, to: r.to, format: r.format };
  if (r.format === 'csv' && r.columns.length > 0) p['fields'] = ['@timestamp', ...r.columns].join(',');
  if (r.order === 'oldest') p['order'] = 'oldest';
  if (r.sort) p['sort'] = r.sort;
  return `/api/v1/export?${new URLSearchParams(p).toString()}`;
}

/** `GET /api/v1/context`: the events around a hit from its host and source. */
export interface ContextResponse {
  before: Hit[];
  event: Hit;
  after: Hit[];
}

/** The URL of `GET /api/v1/context` for a hit. */
export function contextUrl(hit: Hit, n: number): string {
  const ev = hit.event;
  const p: Record<string, string> = { id: hit.id, at: String(ev['@timestamp'] ?? '') };
  // The http source sets no @host: such events are matched on @source alone.
  for (const k of ['host', 'source']) if (typeof ev[`@${k}`] === 'string' && ev[`@${k}`] !== '') p[k] = String(ev[`@${k}`]);
  p['n'] = String(n);
  return `/api/v1/context?${new URLSearchParams(p).toString()}`;
}

/** `GET /api/v1/context`. */
export function context(hit: Hit, n: number, signal?: AbortSignal): Promise<ContextResponse> {
  return request<ContextResponse>('GET', contextUrl(hit, n), undefined, signal);
}
