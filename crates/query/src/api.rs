//! Request and response types of the search API (`/api/v1/*`), shared by the
//! HTTP layer and every [`crate::SearchBackend`].
//!
//! Requests arrive as JSON (`*Request`), are validated and parsed once
//! ([`SearchRequest::parse`] …) into engine-independent forms ([`Search`],
//! [`Aggregate`]) and handed to the backend with the caller's principal.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::ast::Query;
use crate::parser::{parse, ParseError};
use crate::time::{TimeError, TimeRange};

/// Most hits one search page may return.
pub const MAX_PAGE: usize = 10_000;

fn default_size() -> usize {
    100
}

/// `POST /api/v1/search` (also `GET` with the same names as query parameters).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// The query string; empty means everything.
    #[serde(default)]
    pub query: String,
    /// Start of the time range (inclusive): RFC 3339, epoch milliseconds or
    /// relative (`now-15m`). Missing: unbounded.
    #[serde(default)]
    pub from: Option<String>,
    /// End of the time range (exclusive), same forms. Missing: unbounded.
    #[serde(default)]
    pub to: Option<String>,
    /// Hits per page (default 100, at most [`MAX_PAGE`]).
    #[serde(default = "default_size")]
    pub size: usize,
    /// The `next` cursor of the previous page.
    #[serde(default)]
    pub search_after: Option<String>,
    /// Only these fields in each hit (the `@` identity fields are always there).
    #[serde(default)]
    pub fields: Option<Vec<String>>,
    /// `"newest"` first (the default) or `"oldest"` first.
    #[serde(default)]
    pub order: Order,
    /// Sort by a field instead of by time: `"<field>:asc"` or
    /// `"<field>:desc"` (`"<field>"` alone is ascending). Events without
    /// the field come last; ties (and those) newest first. A field with
    /// several values sorts by its smallest (ascending) or largest
    /// (descending). `@timestamp:asc` is `order: "oldest"`.
    #[serde(default)]
    pub sort: Option<String>,
}

/// The order of a search's hits: by event time, then by the order the store
/// received them in (a stable tiebreaker; see `docs/query-semantics.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Newest first.
    #[default]
    Newest,
    /// Oldest first.
    Oldest,
}

/// A field a search sorts its hits by (see [`SearchRequest::sort`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SortBy {
    /// The field's dotted path (never `@timestamp`: that is [`Order`]).
    pub field: String,
    /// Largest first.
    pub desc: bool,
}

impl SortBy {
    /// Parses `"<field>[:asc|:desc]"`. `@timestamp` gives `Err(Ok(order))`:
    /// not a field sort but the time order.
    fn parse(s: &str) -> Result<Result<SortBy, Order>, RequestError> {
        let s = s.trim();
        let (field, dir) = match s.rsplit_once(':') {
            Some((f, d)) if d == "asc" || d == "desc" => (f.trim(), d),
            _ => (s, "asc"),
        };
        if field.is_empty() {
            return Err(RequestError::Invalid(format!("sort: expected <field>:asc or <field>:desc, got {s:?}")));
        }
        let desc = dir == "desc";
        if field == "@timestamp" {
            return Ok(Err(if desc { Order::Newest } else { Order::Oldest }));
        }
        Ok(Ok(SortBy { field: field.to_string(), desc }))
    }
}

/// A validated search.
#[derive(Clone, Debug, PartialEq)]
pub struct Search {
    /// The parsed query.
    pub query: Query,
    /// The time range.
    pub range: TimeRange,
    /// Hits per page.
    pub size: usize,
    /// Opaque cursor from a previous page's `next` (the backend decodes it).
    pub search_after: Option<String>,
    /// Selected fields, if any.
    pub fields: Option<Vec<String>>,
    /// Newest or oldest first (the order of ties under `sort`: always newest first).
    pub order: Order,
    /// Sort by this field instead of by time.
    pub sort: Option<SortBy>,
}

/// Why a request is invalid (an HTTP 400).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// The query string does not parse.
    #[error("{0}")]
    Query(#[from] ParseError),
    /// A time bound does not parse.
    #[error("{0}")]
    Time(#[from] TimeError),
    /// Anything else (size too large, bad aggregation).
    #[error("{0}")]
    Invalid(String),
}

impl SearchRequest {
    /// Validates and parses, with `now_ns` for relative times.
    pub fn parse(&self, now_ns: i64) -> Result<Search, RequestError> {
        if self.size == 0 || self.size > MAX_PAGE {
            return Err(RequestError::Invalid(format!("size must be between 1 and {MAX_PAGE}, got {}", self.size)));
        }
        let (order, sort) = match self.sort.as_deref().filter(|s| !s.trim().is_empty()).map(SortBy::parse) {
            None => (self.order, None),
            Some(parsed) => match parsed? {
                Ok(by) => (Order::Newest, Some(by)),
                Err(order) => (order, None),
            },
        };
        Ok(Search {
            query: parse(&self.query)?,
            range: TimeRange::parse(self.from.as_deref(), self.to.as_deref(), now_ns)?,
            size: self.size,
            search_after: self.search_after.clone(),
            fields: self.fields.clone(),
            order,
            sort,
        })
    }
}

/// One hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Hit {
    /// Stable unique id of the stored event.
    pub id: String,
    /// The event as sluice writes it to ndjson: `@timestamp` (RFC 3339, ns),
    /// `@group`, `@subgroup`, `@host`, `@source`, then its fields.
    #[schema(value_type = BTreeMap<String, serde_json::Value>)]
    pub event: serde_json::Value,
    /// Set when the stored event cannot be shown as JSON: `event` is then a
    /// stand-in (`@timestamp`, the stored text as `message`, the tag
    /// `_unrenderable`) and this says why. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
}

/// A page of hits, newest (or oldest) first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SearchResponse {
    /// All hits of the query in the range (not only this page).
    pub total: u64,
    /// This page.
    pub hits: Vec<Hit>,
    /// Pass as `search_after` to get the next page; `None` on the last page.
    #[schema(required = true)]
    pub next: Option<String>,
    /// Time the backend spent, milliseconds.
    pub took_ms: u64,
}

/// One aggregation of `POST /api/v1/aggregate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Aggregation {
    /// Event counts per time bucket over the request's range. `interval`
    /// (`"1m"`, `"1h"`) or `"auto"`/missing: a round interval giving at most
    /// `buckets` buckets (default 60). Empty buckets are included, so the
    /// buckets sum to the total.
    DateHistogram {
        #[serde(default)]
        interval: Option<String>,
        #[serde(default)]
        buckets: Option<usize>,
    },
    /// The `size` most frequent values of `field` (default 10).
    Terms {
        field: String,
        #[serde(default)]
        size: Option<usize>,
    },
    /// count / min / max / avg / sum of a numeric field.
    Stats { field: String },
}

/// `POST /api/v1/aggregate`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AggregateRequest {
    /// The query string; empty means everything.
    #[serde(default)]
    pub query: String,
    /// Time range start (see [`SearchRequest::from`]).
    #[serde(default)]
    pub from: Option<String>,
    /// Time range end.
    #[serde(default)]
    pub to: Option<String>,
    /// Named aggregations.
    #[serde(default)]
    pub aggs: BTreeMap<String, Aggregation>,
}

/// A validated aggregation request.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregate {
    /// The parsed query.
    pub query: Query,
    /// The time range.
    pub range: TimeRange,
    /// Named aggregations.
    pub aggs: BTreeMap<String, Aggregation>,
}

impl AggregateRequest {
    /// Validates and parses, with `now_ns` for relative times.
    pub fn parse(&self, now_ns: i64) -> Result<Aggregate, RequestError> {
        Ok(Aggregate {
            query: parse(&self.query)?,
            range: TimeRange::parse(self.from.as_deref(), self.to.as_deref(), now_ns)?,
            aggs: self.aggs.clone(),
        })
    }
}

/// The schema of [`Bucket::key`]: a number (histograms), or a string,
/// number, boolean or null (terms).
fn bucket_key() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Number, Type::Boolean, Type::Null]))
        .into()
}

/// One bucket of a histogram or terms aggregation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Bucket {
    /// Histogram: bucket start in epoch milliseconds; terms: the value.
    #[schema(schema_with = bucket_key)]
    pub key: serde_json::Value,
    /// Events in the bucket.
    pub count: u64,
}

/// Numeric statistics; `min`/`max`/`avg` are `None` when `count` is 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Stats {
    /// Events with a numeric value in the field.
    pub count: u64,
    /// Smallest value.
    #[schema(required = true)]
    pub min: Option<f64>,
    /// Largest value.
    #[schema(required = true)]
    pub max: Option<f64>,
    /// Mean.
    #[schema(required = true)]
    pub avg: Option<f64>,
    /// Sum.
    pub sum: f64,
}

/// The result of one [`Aggregation`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AggregationResult {
    /// See [`Aggregation::DateHistogram`].
    DateHistogram { interval_ms: i64, buckets: Vec<Bucket> },
    /// See [`Aggregation::Terms`]; `other` counts events with a value outside the top N.
    Terms { buckets: Vec<Bucket>, other: u64 },
    /// See [`Aggregation::Stats`].
    Stats(Stats),
}

/// `POST /api/v1/aggregate` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AggregateResponse {
    /// Events matching the query in the range.
    pub total: u64,
    /// Results by name.
    pub aggs: BTreeMap<String, AggregationResult>,
    /// Time the backend spent, milliseconds.
    pub took_ms: u64,
}

/// `GET /api/v1/fields?from=…&to=…`: the fields of the events in a time range.
#[derive(Clone, Debug, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct FieldsRequest {
    /// Time range start (see [`SearchRequest::from`]); none: unbounded.
    #[serde(default)]
    pub from: Option<String>,
    /// Time range end (see [`SearchRequest::to`]); none: unbounded.
    #[serde(default)]
    pub to: Option<String>,
}

impl FieldsRequest {
    /// The time range at `now_ns`.
    pub fn range(&self, now_ns: i64) -> Result<TimeRange, RequestError> {
        Ok(TimeRange::parse(self.from.as_deref(), self.to.as_deref(), now_ns)?)
    }
}

/// `GET /api/v1/tail?query=…`: Server-Sent Events of new matching events.
#[derive(Clone, Debug, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TailRequest {
    /// The query string; empty means everything.
    #[serde(default)]
    pub query: String,
}

/// The type a field was seen with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    /// Exact-match string (identity fields, short values).
    Keyword,
    /// Full-text string (`message`).
    Text,
    /// Integer or float.
    Number,
    /// Timestamp.
    Date,
    /// true/false.
    Boolean,
}

/// `GET /api/v1/fields` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FieldInfo {
    /// Dotted path.
    pub name: String,
    /// Types seen (a field can hold numbers in some events, strings in others).
    pub types: Vec<FieldType>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sort_of(s: &str) -> Result<(Order, Option<SortBy>), RequestError> {
        let r = SearchRequest { sort: Some(s.into()), size: 10, ..Default::default() }.parse(0)?;
        Ok((r.order, r.sort))
    }

    #[test]
    fn sort_parses_field_and_direction() {
        let by = |f: &str, desc| Some(SortBy { field: f.into(), desc });
        assert_eq!(sort_of("http.status:desc").unwrap(), (Order::Newest, by("http.status", true)));
        assert_eq!(sort_of("http.status:asc").unwrap(), (Order::Newest, by("http.status", false)));
        assert_eq!(sort_of("http.status").unwrap(), (Order::Newest, by("http.status", false)));
        // A colon in the name is kept when no direction follows it.
        assert_eq!(sort_of("a:b").unwrap(), (Order::Newest, by("a:b", false)));
        assert_eq!(sort_of("@timestamp:asc").unwrap(), (Order::Oldest, None));
        assert_eq!(sort_of("@timestamp:desc").unwrap(), (Order::Newest, None));
        assert_eq!(sort_of("").unwrap(), (Order::Newest, None));
        assert_eq!(
            sort_of(":desc").unwrap_err().to_string(),
            "sort: expected <field>:asc or <field>:desc, got \":desc\""
        );
    }
}
