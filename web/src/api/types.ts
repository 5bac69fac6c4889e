// Types of the search API, mirroring the Rust DTOs in
// crates/query/src/api.rs (SearchRequest, SearchResponse, Hit, Aggregation,
// AggregateRequest/Response, Bucket, Stats, FieldInfo) and the error body of
// crates/api/src/error.rs. Field names are the JSON names.

/** `POST /api/v1/search` body (`SearchRequest`). */
export interface SearchRequest {
  query: string;
  from?: string | null;
  to?: string | null;
  size?: number;
  search_after?: string | null;
  fields?: string[] | null;
}

/** One stored event as sluice writes it: `@timestamp`, `@group`, … then its fields. */
export type EventDoc = Record<string, unknown> & {
  '@timestamp'?: string;
  '@group'?: string;
  '@subgroup'?: string;
  '@host'?: string;
  '@source'?: string;
};

/** `Hit`. */
export interface Hit {
  id: string;
  event: EventDoc;
  /** Set when the stored event cannot be shown as JSON; `event` is then a stand-in. */
  error?: string;
}

/** `SearchResponse`: a page of hits, newest first. */
export interface SearchResponse {
  total: number;
  hits: Hit[];
  next: string | null;
  took_ms: number;
}

/** `Aggregation` (tagged by `type`). */
export type Aggregation =
  | { type: 'date_histogram'; interval?: string | null; buckets?: number | null }
  | { type: 'terms'; field: string; size?: number | null }
  | { type: 'stats'; field: string };

/** `AggregateRequest`. */
export interface AggregateRequest {
  query: string;
  from?: string | null;
  to?: string | null;
  aggs: Record<string, Aggregation>;
}

/** `Bucket`: histogram key is epoch ms, terms key is the value. */
export interface Bucket {
  key: string | number | boolean | null;
  count: number;
}

/** `Stats`. */
export interface Stats {
  count: number;
  min: number | null;
  max: number | null;
  avg: number | null;
  sum: number;
}

/** `AggregationResult` (tagged by `type`). */
export type AggregationResult =
  | { type: 'date_histogram'; interval_ms: number; buckets: Bucket[] }
  | { type: 'terms'; buckets: Bucket[]; other: number }
  | ({ type: 'stats' } & Stats);

/** `AggregateResponse`. */
export interface AggregateResponse {
  total: number;
  aggs: Record<string, AggregationResult>;
  took_ms: number;
}

/** `FieldType`. */
export type FieldType = 'keyword' | 'text' | 'number' | 'date' | 'boolean';

/** `FieldInfo`. */
export interface FieldInfo {
  name: string;
  types: FieldType[];
}

/** The closed set of error types (crates/api/src/error.rs, docs/specs/ui-api.md §1.1), plus `network` for a failed fetch. */
export type ErrorType =
  | 'query_parse_error'
  | 'time_error'
  | 'invalid_request'
  | 'bad_request'
  | 'unauthorized'
  | 'invalid_credentials'
  | 'invalid_code'
  | 'forbidden'
  | 'csrf_failed'
  | 'totp_enrollment_required'
  | 'not_found'
  | 'conflict'
  | 'locked'
  | 'rate_limited'
  | 'no_store'
  | 'internal'
  | 'network';

/** The error body (docs/specs/ui-api.md §1.1). */
export interface ErrorBody {
  error: { type: ErrorType; message: string; position?: number; retry_after?: number; field?: string };
}

/** `/_node/stats`: one component's entry under `plugins`. */
export interface ComponentStats {
  id: string;
  type: string;
  events: { in: number; out: number; failed: number; dropped: number };
  bytes: { in: number; out: number };
  errors: number;
  rates: { '1m': number; '5m': number; '15m': number };
  counters: Record<string, number>;
}

/** `/_node/stats`: one pipeline. */
export interface PipelineStats {
  events: { in: number; out: number; filtered: number };
  rates: { '1m': number; '5m': number; '15m': number };
  queue: { type: string; events: number; bytes: number };
  batch_latency_us: { count: number; p50: number; p90: number; p99: number; max: number };
  plugins: { sources: ComponentStats[]; filters: ComponentStats[]; sinks: ComponentStats[] };
}

/** `GET /_node/stats`. */
export interface NodeStats {
  name: string;
  version: string;
  uptime_ms: number;
  process: { rss_bytes: number; cpu_seconds: number; threads: number; open_files: number };
  pipelines: Record<string, PipelineStats>;
}
