// Types of the search API. The shapes are generated (ADR 0104): the Rust DTOs
// in crates/query/src/api.rs and crates/api/src/error.rs → docs/openapi.json
// (utoipa) → ./schema.d.ts (openapi-typescript); these are aliases, refined
// only where the document is wider than what the UI relies on. `/_node/stats`
// is not described field by field in the document yet, so its types stay here.
import type { components } from './schema';

type Schemas = components['schemas'];

/** `POST /api/v1/search` body (`SearchRequest`). */
export type SearchRequest = Schemas['SearchRequest'];

/** One stored event as sluice writes it: `@timestamp`, `@group`, … then its fields. */
export type EventDoc = Record<string, unknown> & {
  '@timestamp'?: string;
  '@group'?: string;
  '@subgroup'?: string;
  '@host'?: string;
  '@source'?: string;
};

/** `Hit`, with the identity fields of `event` spelt out (the document says "an object"). */
export type Hit = Omit<Schemas['Hit'], 'event'> & { event: EventDoc };

/** `SearchResponse`: a page of hits, newest first. */
export type SearchResponse = Omit<Schemas['SearchResponse'], 'hits'> & { hits: Hit[] };

/** `Aggregation` (tagged by `type`). */
export type Aggregation = Schemas['Aggregation'];

/** `AggregateRequest`. */
export type AggregateRequest = Schemas['AggregateRequest'];

/** `Bucket`: histogram key is epoch ms, terms key is the value. */
export type Bucket = Schemas['Bucket'];

/** `Stats`. */
export type Stats = Schemas['Stats'];

/** `AggregationResult` (tagged by `type`). */
export type AggregationResult = Schemas['AggregationResult'];

/** `AggregateResponse`. */
export type AggregateResponse = Schemas['AggregateResponse'];

/** `FieldType`. */
export type FieldType = Schemas['FieldType'];

/** `FieldInfo`. */
export type FieldInfo = Schemas['FieldInfo'];

/** The closed set of error types (crates/api/src/error.rs, docs/specs/ui-api.md §1.1), plus `network` for a failed fetch. */
export type ErrorType = Schemas['ErrorType'] | 'network';

/** The error body (docs/specs/ui-api.md §1.1). */
export interface ErrorBody {
  error: Omit<Schemas['ErrorDetail'], 'type'> & { type: ErrorType };
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
  /** Gauges: numbers, or labelled series (arrays); sources have
   * `last_event_timestamp_seconds` once they emitted. */
  gauges: Record<string, unknown>;
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
  /** The search backend's counters and gauges under their Prometheus names
   * (the embedded store: `sluice_store_disk_bytes`, `…_partitions`, …). */
  search: Record<string, number>;
}
