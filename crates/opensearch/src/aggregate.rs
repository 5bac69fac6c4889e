//! `aggregate`: date histogram, terms and stats as OpenSearch aggregations,
//! answered in the embedded store's shapes.
//!
//! - Date histogram: the same bucket layout as the embedded store
//!   ([`sluice_query::histogram::histogram_layout`], over the request's range
//!   or, where it is open, the matching events' first and last time), as a
//!   `fixed_interval` histogram with empty buckets.
//! - Terms: ordered by count, ties by value; exact counts are required: an
//!   answer with a non-zero `doc_count_error_upper_bound` (more distinct
//!   values per shard than `shard_size`) is refused with a 400 rather than
//!   returned approximate.
//! - Stats: `stats` on numeric fields; identity fields, `message` and
//!   `@timestamp` are refused as in the embedded store; other non-numeric
//!   fields count 0.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{json, Value};
use sluice_query::api::{Aggregate, AggregateResponse, AggregationResult, Bucket, Stats};
use sluice_query::histogram::{histogram_layout, histogram_result, HistogramLayout};
use sluice_query::{Aggregation, BackendError, Principal};

use crate::backend::{range_filter, u64_at, Inner};
use crate::mapping::KEYWORD_FIELDS;
use crate::permissions::restricted;
use crate::schema::{Kind, Schema};
use crate::translate::translate;

/// Distinct values each shard reports for a terms aggregation.
pub const TERMS_SHARD_SIZE: usize = 10_000;

enum Prepared {
    Histogram(HistogramLayout),
    Terms { field: Option<String>, size: usize },
    Stats { field: Option<String> },
}

fn bad(msg: String) -> BackendError {
    BackendError::BadRequest(msg)
}

/// The field a terms aggregation (or a field sort) reads; `None` when no
/// index maps it.
pub(crate) fn terms_field(name: &str, field: &str, schema: &Schema) -> Result<Option<String>, BackendError> {
    match field {
        "" => return Err(bad(format!("{name}: empty field name"))),
        "message" => return Err(bad(format!("{name}: message is a full-text field"))),
        "@timestamp" => return Err(bad(format!("{name}: use a date_histogram for @timestamp"))),
        _ => {}
    }
    Ok(match schema.kind(field)? {
        None | Some(Kind::Object) => None,
        Some(Kind::Text) if schema.has_keyword_sub(field) => Some(format!("{field}.keyword")),
        Some(Kind::Text) => return Err(bad(format!("{name}: {field} has no keyword sub-field in every index"))),
        Some(Kind::Other) => return Err(bad(format!("{name}: {field} has a type that cannot be counted or sorted"))),
        Some(_) => Some(field.to_string()),
    })
}

fn stats_field(name: &str, field: &str, schema: &Schema) -> Result<Option<String>, BackendError> {
    if field.is_empty() {
        return Err(bad(format!("{name}: empty field name")));
    }
    if field == "message" || field == "@timestamp" || KEYWORD_FIELDS.contains(&field) {
        return Err(bad(format!("{name}: {field} is not numeric")));
    }
    Ok(match schema.kind(field)? {
        Some(Kind::Number) => Some(field.to_string()),
        _ => None,
    })
}

/// The key of a terms bucket as the embedded store writes it.
fn term_key(b: &Value) -> Value {
    if let Some(s) = b.get("key_as_string").and_then(Value::as_str) {
        match s {
            "true" => return Value::Bool(true),
            "false" => return Value::Bool(false),
            _ => {}
        }
    }
    match b.get("key") {
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n.clone()),
        },
        Some(v) => v.clone(),
        None => Value::Null,
    }
}

/// The first and last time of the matching events (ns), if any.
async fn extent(os: &Inner, query: &Value) -> Result<Option<(i64, i64)>, BackendError> {
    let body = json!({"size": 0, "query": query, "aggs": {
        "lo": {"min": {"field": "@timestamp"}}, "hi": {"max": {"field": "@timestamp"}}}});
    let r = os.search(&body).await?;
    let ms = |p: &str| r.pointer(p).and_then(Value::as_f64);
    Ok(match (ms("/aggregations/lo/value"), ms("/aggregations/hi/value")) {
        (Some(lo), Some(hi)) => Some(((lo * 1e6) as i64, (hi * 1e6) as i64)),
        _ => None,
    })
}

/// See the module doc.
pub(crate) async fn aggregate(
    os: &Inner,
    principal: &Principal,
    a: &Aggregate,
) -> Result<AggregateResponse, BackendError> {
    let t0 = Instant::now();
    let schema = os.schema().await?;
    let query = restricted(principal, translate(&a.query, &schema)?, range_filter(&a.range));
    let mut ext = match (a.range.from_ns, a.range.to_ns) {
        (Some(f), Some(t)) => Some((f, t)),
        _ => None,
    };
    if ext.is_none() && a.aggs.values().any(|g| matches!(g, Aggregation::DateHistogram { .. })) {
        ext = extent(os, &query)
            .await?
            .map(|(lo, hi)| (a.range.from_ns.unwrap_or(lo), a.range.to_ns.unwrap_or(hi.saturating_add(1))));
    }
    let mut prepared = BTreeMap::new();
    let mut aggs = serde_json::Map::new();
    for (idx, (name, g)) in a.aggs.iter().enumerate() {
        // Names of our own: a request's names may hold characters OpenSearch refuses.
        let key = format!("a{idx}");
        let p = match g {
            Aggregation::DateHistogram { interval, buckets } => {
                let l = histogram_layout(name, interval.as_deref(), *buckets, ext)?;
                if l.buckets > 0 {
                    let origin_ms = l.origin_ns.div_euclid(1_000_000);
                    let last_ms = origin_ms + (l.buckets as i64 - 1) * l.interval_ms;
                    aggs.insert(
                        key.clone(),
                        json!({"date_histogram": {
                        "field": "@timestamp", "fixed_interval": format!("{}ms", l.interval_ms),
                        "min_doc_count": 0, "extended_bounds": {"min": origin_ms, "max": last_ms}}}),
                    );
                }
                Prepared::Histogram(l)
            }
            Aggregation::Terms { field, size } => {
                let size = size.unwrap_or(10);
                if size == 0 {
                    return Err(bad(format!("{name}: size must be positive")));
                }
                let f = terms_field(name, field, &schema)?;
                if let Some(f) = &f {
                    aggs.insert(
                        key.clone(),
                        json!({"terms": {"field": f, "size": size,
                        "shard_size": TERMS_SHARD_SIZE.max(size),
                        "order": [{"_count": "desc"}, {"_key": "asc"}]}}),
                    );
                }
                Prepared::Terms { field: f, size }
            }
            Aggregation::Stats { field } => {
                let f = stats_field(name, field, &schema)?;
                if let Some(f) = &f {
                    aggs.insert(key.clone(), json!({"stats": {"field": f}}));
                }
                Prepared::Stats { field: f }
            }
        };
        prepared.insert(name.clone(), (key, p));
    }
    let body = json!({"size": 0, "track_total_hits": true, "query": query, "aggs": aggs});
    let r = os.search(&body).await?;
    let total = u64_at(&r, "/hits/total/value")?;
    let mut out = BTreeMap::new();
    for (name, (key, p)) in prepared {
        let res = r.pointer(&format!("/aggregations/{key}"));
        let result = match p {
            Prepared::Histogram(l) => {
                let mut counts = vec![0u64; l.buckets];
                for b in res.and_then(|v| v.get("buckets")).and_then(Value::as_array).into_iter().flatten() {
                    let key_ms = b.get("key").and_then(Value::as_i64).unwrap_or(i64::MIN);
                    let i = (key_ms.saturating_mul(1_000_000) - l.origin_ns).div_euclid(l.interval_ns());
                    let n = b.get("doc_count").and_then(Value::as_u64).unwrap_or(0);
                    match usize::try_from(i).ok().and_then(|i| counts.get_mut(i)) {
                        Some(c) => *c += n,
                        None if n == 0 => {}
                        None => {
                            return Err(BackendError::Internal(format!("{name}: bucket {key_ms} outside the layout")))
                        }
                    }
                }
                histogram_result(&l, counts)
            }
            Prepared::Terms { field: None, .. } => AggregationResult::Terms { buckets: Vec::new(), other: 0 },
            Prepared::Terms { field: Some(f), size } => {
                let res = res.ok_or_else(|| BackendError::Internal(format!("{name}: no answer")))?;
                if res.get("doc_count_error_upper_bound").and_then(Value::as_u64).unwrap_or(0) > 0 {
                    return Err(bad(format!(
                        "{name}: terms of {f} cannot be counted exactly on this cluster (more than {} distinct values on a shard)",
                        TERMS_SHARD_SIZE.max(size)
                    )));
                }
                let buckets = res
                    .get("buckets")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|b| Bucket {
                        key: term_key(b),
                        count: b.get("doc_count").and_then(Value::as_u64).unwrap_or(0),
                    })
                    .collect();
                AggregationResult::Terms {
                    buckets,
                    other: res.get("sum_other_doc_count").and_then(Value::as_u64).unwrap_or(0),
                }
            }
            Prepared::Stats { field } => {
                let v = |k: &str| res.filter(|_| field.is_some()).and_then(|r| r.get(k)).and_then(Value::as_f64);
                let count = res.and_then(|r| r.get("count")).and_then(Value::as_u64).unwrap_or(0);
                AggregationResult::Stats(Stats {
                    count,
                    min: v("min").filter(|_| count > 0),
                    max: v("max").filter(|_| count > 0),
                    avg: v("avg").filter(|_| count > 0),
                    sum: v("sum").unwrap_or(0.0),
                })
            }
        };
        out.insert(name, result);
    }
    Ok(AggregateResponse { total, aggs: out, took_ms: t0.elapsed().as_millis() as u64 })
}
