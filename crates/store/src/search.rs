//! Search, aggregations, fields and tail over the partitions: the
//! [`SearchBackend`] implementation of [`Store`].
//!
//! Every path ANDs the principal's filter into the engine query (see
//! [`crate::translate::principal_filter`]); the blocking work runs on
//! tokio's blocking pool.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use sluice_query::api::{Aggregate, Search};
use sluice_query::{
    AggregateResponse, Aggregation, AggregationResult, BackendError, Bucket, FieldInfo, FieldType, Hit, Principal,
    Query, SearchBackend, SearchResponse, Stats, TailStream, TimeRange,
};
use tantivy::collector::Count;
use tantivy::schema::Value as _;
use tantivy::TantivyDocument;
use tracing::info_span;

use crate::collect::{
    HistogramCollector, MinMaxCollector, SortKey, StatsCollector, TermKey, TermsCollector, TopCollector,
};
use crate::fields::FieldsCollector;
use crate::schema::names;
use crate::store::Store;
use crate::translate::{full_query, TranslateError};

/// Round intervals an automatic histogram chooses from, milliseconds.
pub const AUTO_INTERVALS_MS: &[i64] = &[
    1_000,
    5_000,
    10_000,
    30_000,
    60_000,
    300_000,
    600_000,
    1_800_000,
    3_600_000,
    10_800_000,
    43_200_000,
    86_400_000,
    604_800_000,
    2_592_000_000,
    31_536_000_000,
];

/// Default number of histogram buckets.
pub const DEFAULT_BUCKETS: usize = 60;
/// Most histogram buckets a request may produce.
pub const MAX_BUCKETS: usize = 10_000;

fn internal(e: impl std::fmt::Display) -> BackendError {
    BackendError::Internal(e.to_string())
}

fn bad(e: TranslateError) -> BackendError {
    BackendError::BadRequest(e.0)
}

/// Encodes a cursor.
pub fn encode_cursor(k: SortKey) -> String {
    format!("{}:{}", k.0, k.1)
}

/// Decodes a cursor.
pub fn decode_cursor(s: &str) -> Result<SortKey, BackendError> {
    let err = || BackendError::BadRequest(format!("invalid search_after cursor {s:?}"));
    let (a, b) = s.split_once(':').ok_or_else(err)?;
    Ok((a.parse().map_err(|_| err())?, b.parse().map_err(|_| err())?))
}

/// Parses `"30s"`, `"5m"`, `"1h"`, `"1d"`, `"1w"` (or a number of ms) to milliseconds.
pub fn parse_interval(s: &str) -> Result<i64, BackendError> {
    let s = s.trim();
    let unit_at = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: i64 = s[..unit_at].parse().map_err(|_| BackendError::BadRequest(format!("invalid interval {s:?}")))?;
    let unit = match &s[unit_at..] {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 604_800_000,
        u => return Err(BackendError::BadRequest(format!("invalid interval {s:?}: unknown unit {u:?}"))),
    };
    if n <= 0 {
        return Err(BackendError::BadRequest(format!("invalid interval {s:?}: must be positive")));
    }
    Ok(n * unit)
}

/// The smallest round interval giving at most `buckets` buckets over `[lo, hi)`.
pub fn auto_interval_ms(lo_ns: i64, hi_ns: i64, buckets: usize) -> i64 {
    let buckets = buckets.max(1) as i64;
    for &iv in AUTO_INTERVALS_MS {
        let ns = iv * 1_000_000;
        let n = bucket_count(lo_ns, hi_ns, ns);
        if n <= buckets {
            return iv;
        }
    }
    let last = *AUTO_INTERVALS_MS.last().unwrap_or(&31_536_000_000);
    let span_ms = (hi_ns - lo_ns) / 1_000_000;
    (span_ms / buckets + 1).div_euclid(last).max(1) * last
}

fn bucket_count(lo_ns: i64, hi_ns: i64, iv_ns: i64) -> i64 {
    let origin = lo_ns.div_euclid(iv_ns) * iv_ns;
    let end = hi_ns.max(lo_ns + 1);
    (end - origin + iv_ns - 1).div_euclid(iv_ns)
}

fn term_key_json(k: &TermKey) -> serde_json::Value {
    match k {
        TermKey::Str(s) => serde_json::Value::String(s.clone()),
        TermKey::Bool(b) => serde_json::Value::Bool(*b),
        TermKey::Num(bits) => {
            let f = f64::from_bits(*bits);
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                serde_json::Value::from(f as i64)
            } else {
                serde_json::Number::from_f64(f).map(serde_json::Value::Number).unwrap_or(serde_json::Value::Null)
            }
        }
    }
}

/// The fast column a terms/stats aggregation reads for a field name.
fn column_of(field: &str, kind: &str) -> Result<String, BackendError> {
    match field {
        "" => Err(BackendError::BadRequest(format!("{kind}: empty field name"))),
        names::MESSAGE => Err(BackendError::BadRequest(format!("{kind}: message is a full-text field"))),
        "@timestamp" => Err(BackendError::BadRequest(format!("{kind}: use a date_histogram for @timestamp"))),
        names::GROUP | names::SUBGROUP | names::HOST | names::SOURCE | names::LEVEL => Ok(field.to_string()),
        f => Ok(format!("{}.{f}", names::ATTRS)),
    }
}

/// Keeps the identity keys and the selected fields (dotted paths) of a hit.
fn select_fields(event: serde_json::Value, fields: &[String]) -> serde_json::Value {
    let serde_json::Value::Object(map) = event else { return event };
    let mut out = serde_json::Map::new();
    for (k, v) in &map {
        if k.starts_with('@') && sluice_core::codec::RESERVED.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    for f in fields {
        if let Some(v) = map.get(f) {
            out.insert(f.clone(), v.clone());
            continue;
        }
        let segs: Vec<&str> = f.split('.').collect();
        let mut cur = map.get(segs[0]);
        for s in &segs[1..] {
            cur = cur.and_then(|c| c.get(*s));
        }
        if let Some(v) = cur {
            insert_path(&mut out, &segs, v.clone());
        }
    }
    serde_json::Value::Object(out)
}

fn insert_path(obj: &mut serde_json::Map<String, serde_json::Value>, segs: &[&str], v: serde_json::Value) {
    let Some((first, rest)) = segs.split_first() else { return };
    if rest.is_empty() {
        obj.insert(first.to_string(), v);
        return;
    }
    let child = obj.entry(first.to_string()).or_insert_with(|| serde_json::Value::Object(Default::default()));
    if let serde_json::Value::Object(m) = child {
        insert_path(m, rest, v);
    }
}

impl Store {
    /// A page of hits, newest first (blocking).
    pub fn search_sync(&self, principal: &Principal, search: &Search) -> Result<SearchResponse, BackendError> {
        let span = info_span!("store_search", principal = %principal.name);
        let _g = span.enter();
        let t0 = Instant::now();
        let after = search.search_after.as_deref().map(decode_cursor).transpose()?;
        let (from, to) = (search.range.from_ns, search.range.to_ns);
        let query = full_query(&self.fields, principal, &search.query, from, to).map_err(bad)?;
        let k = search.size + 1;
        let mut total = 0u64;
        let mut cands: Vec<(SortKey, usize, tantivy::DocAddress)> = Vec::new();
        let parts = self.partitions_for(from, to);
        let mut searchers = Vec::with_capacity(parts.len());
        for (i, p) in parts.iter().enumerate() {
            let searcher = p.reader.searcher();
            // Partitions are visited newest first: once k candidates are older
            // than everything this partition can hold, it only needs counting.
            let kth = if cands.len() >= k { Some(cands[k - 1].0) } else { None };
            let need = kth.is_none_or(|kk| p.end_ns > kk.0);
            let (count, hits) = if need {
                searcher.search(&*query, &TopCollector { k, after }).map_err(internal)?
            } else {
                (searcher.search(&*query, &Count).map_err(internal)? as u64, Vec::new())
            };
            total += count;
            cands.extend(hits.into_iter().map(|(key, addr)| (key, i, addr)));
            cands.sort_unstable_by_key(|c| std::cmp::Reverse(c.0));
            cands.truncate(k);
            searchers.push(searcher);
        }
        let more = cands.len() > search.size;
        cands.truncate(search.size);
        let mut hits = Vec::with_capacity(cands.len());
        for (key, i, addr) in &cands {
            let doc: TantivyDocument = searchers[*i].doc(*addr).map_err(internal)?;
            let text = doc.get_first(self.fields.src).and_then(|v| v.as_str()).unwrap_or_default();
            let mut event: serde_json::Value = serde_json::from_str(text).map_err(internal)?;
            if let Some(f) = &search.fields {
                event = select_fields(event, f);
            }
            hits.push(Hit { id: key.1.to_string(), event });
        }
        let next = if more { cands.last().map(|c| encode_cursor(c.0)) } else { None };
        Ok(SearchResponse { total, hits, next, took_ms: t0.elapsed().as_millis() as u64 })
    }

    /// Aggregations (blocking).
    pub fn aggregate_sync(&self, principal: &Principal, agg: &Aggregate) -> Result<AggregateResponse, BackendError> {
        let span = info_span!("store_aggregate", principal = %principal.name);
        let _g = span.enter();
        let t0 = Instant::now();
        let (from, to) = (agg.range.from_ns, agg.range.to_ns);
        let query = full_query(&self.fields, principal, &agg.query, from, to).map_err(bad)?;
        let parts = self.partitions_for(from, to);
        let searchers: Vec<_> = parts.iter().map(|p| p.reader.searcher()).collect();
        // Bounds of the histogram: the request's range, else the matches' extent.
        let mut total: Option<u64> = None;
        let mut extent: Option<(i64, i64)> = None;
        let needs_hist = agg.aggs.values().any(|a| matches!(a, Aggregation::DateHistogram { .. }));
        if needs_hist && (from.is_none() || to.is_none()) {
            let mut mm = (0u64, i64::MAX, i64::MIN);
            for s in &searchers {
                let (c, lo, hi) = s.search(&*query, &MinMaxCollector).map_err(internal)?;
                mm = (mm.0 + c, mm.1.min(lo), mm.2.max(hi));
            }
            total = Some(mm.0);
            if mm.0 > 0 {
                extent = Some((from.unwrap_or(mm.1), to.unwrap_or(mm.2.saturating_add(1))));
            }
        } else if let (Some(f), Some(t)) = (from, to) {
            extent = Some((f, t));
        }
        let total = match total {
            Some(t) => t,
            None => searchers
                .iter()
                .map(|s| s.search(&*query, &Count).map(|c| c as u64))
                .sum::<Result<u64, _>>()
                .map_err(internal)?,
        };
        let mut out = BTreeMap::new();
        for (name, a) in &agg.aggs {
            let r = match a {
                Aggregation::DateHistogram { interval, buckets } => {
                    let want = buckets.unwrap_or(DEFAULT_BUCKETS);
                    if want == 0 || want > MAX_BUCKETS {
                        return Err(BackendError::BadRequest(format!(
                            "{name}: buckets must be between 1 and {MAX_BUCKETS}"
                        )));
                    }
                    match extent {
                        None => AggregationResult::DateHistogram {
                            interval_ms: match interval.as_deref() {
                                Some(s) if s != "auto" => parse_interval(s)?,
                                _ => AUTO_INTERVALS_MS[0],
                            },
                            buckets: Vec::new(),
                        },
                        Some((lo, hi)) => {
                            let iv_ms = match interval.as_deref() {
                                Some(s) if s != "auto" => parse_interval(s)?,
                                _ => auto_interval_ms(lo, hi, want),
                            };
                            let iv = iv_ms * 1_000_000;
                            let n = bucket_count(lo, hi, iv);
                            if n as usize > MAX_BUCKETS {
                                return Err(BackendError::BadRequest(format!(
                                    "{name}: interval {iv_ms}ms gives {n} buckets (at most {MAX_BUCKETS})"
                                )));
                            }
                            let origin = lo.div_euclid(iv) * iv;
                            let c = HistogramCollector { origin_ns: origin, interval_ns: iv, buckets: n as usize };
                            let mut counts = vec![0u64; n as usize];
                            for s in &searchers {
                                for (o, v) in counts.iter_mut().zip(s.search(&*query, &c).map_err(internal)?) {
                                    *o += v;
                                }
                            }
                            let buckets = counts
                                .into_iter()
                                .enumerate()
                                .map(|(i, count)| Bucket {
                                    key: serde_json::Value::from((origin + i as i64 * iv).div_euclid(1_000_000)),
                                    count,
                                })
                                .collect();
                            AggregationResult::DateHistogram { interval_ms: iv_ms, buckets }
                        }
                    }
                }
                Aggregation::Terms { field, size } => {
                    let c = TermsCollector { column: column_of(field, name)? };
                    let mut all: std::collections::HashMap<TermKey, u64> = Default::default();
                    for s in &searchers {
                        for (k, v) in s.search(&*query, &c).map_err(internal)? {
                            *all.entry(k).or_default() += v;
                        }
                    }
                    let mut v: Vec<(TermKey, u64)> = all.into_iter().collect();
                    v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                    let size = size.unwrap_or(10);
                    let other = v.iter().skip(size).map(|x| x.1).sum();
                    let buckets =
                        v.into_iter().take(size).map(|(k, count)| Bucket { key: term_key_json(&k), count }).collect();
                    AggregationResult::Terms { buckets, other }
                }
                Aggregation::Stats { field } => {
                    let col = column_of(field, name)?;
                    if !col.starts_with(names::ATTRS) {
                        return Err(BackendError::BadRequest(format!("{name}: {field} is not numeric")));
                    }
                    let c = StatsCollector { column: col };
                    let mut acc =
                        crate::collect::StatsAcc { min: f64::INFINITY, max: f64::NEG_INFINITY, ..Default::default() };
                    for s in &searchers {
                        let r = s.search(&*query, &c).map_err(internal)?;
                        acc.events += r.events;
                        acc.values += r.values;
                        acc.sum += r.sum;
                        acc.min = acc.min.min(r.min);
                        acc.max = acc.max.max(r.max);
                    }
                    let some = acc.values > 0;
                    AggregationResult::Stats(Stats {
                        count: acc.events,
                        min: some.then_some(acc.min),
                        max: some.then_some(acc.max),
                        avg: some.then(|| acc.sum / acc.values as f64),
                        sum: acc.sum,
                    })
                }
            };
            out.insert(name.clone(), r);
        }
        Ok(AggregateResponse { total, aggs: out, took_ms: t0.elapsed().as_millis() as u64 })
    }

    /// The fields of the events in `range` the principal may read (blocking):
    /// every such event counts, not a sample (see [`crate::fields`]).
    pub fn fields_sync(&self, principal: &Principal, range: &TimeRange) -> Result<Vec<FieldInfo>, BackendError> {
        let span = info_span!("store_fields", principal = %principal.name);
        let _g = span.enter();
        let (from, to) = (range.from_ns, range.to_ns);
        let query = full_query(&self.fields, principal, &Query::All, from, to).map_err(bad)?;
        let collector = FieldsCollector { present: self.fields.present };
        let mut seen: BTreeMap<String, BTreeSet<u8>> = BTreeMap::new();
        for p in self.partitions_for(from, to) {
            for (name, ty) in p.reader.searcher().search(&*query, &collector).map_err(internal)? {
                seen.entry(name).or_default().insert(type_code(ty));
            }
        }
        Ok(seen
            .into_iter()
            .map(|(name, types)| FieldInfo { name, types: types.into_iter().map(field_type).collect() })
            .collect())
    }

    /// Subscribes to the live tail.
    pub fn tail_sync(&self, principal: &Principal, query: &Query) -> TailStream {
        self.subscribe(principal, query)
    }

    fn me(&self) -> Result<Arc<Store>, BackendError> {
        self.me.upgrade().ok_or_else(|| BackendError::Internal("store is shutting down".into()))
    }
}

fn type_code(t: FieldType) -> u8 {
    match t {
        FieldType::Keyword => 0,
        FieldType::Text => 1,
        FieldType::Number => 2,
        FieldType::Date => 3,
        FieldType::Boolean => 4,
    }
}

fn field_type(c: u8) -> FieldType {
    match c {
        0 => FieldType::Keyword,
        1 => FieldType::Text,
        2 => FieldType::Number,
        3 => FieldType::Date,
        _ => FieldType::Boolean,
    }
}

#[async_trait]
impl SearchBackend for Store {
    async fn search(&self, principal: &Principal, search: &Search) -> Result<SearchResponse, BackendError> {
        let (me, p, s) = (self.me()?, principal.clone(), search.clone());
        tokio::task::spawn_blocking(move || me.search_sync(&p, &s)).await.map_err(internal)?
    }

    async fn aggregate(&self, principal: &Principal, agg: &Aggregate) -> Result<AggregateResponse, BackendError> {
        let (me, p, a) = (self.me()?, principal.clone(), agg.clone());
        tokio::task::spawn_blocking(move || me.aggregate_sync(&p, &a)).await.map_err(internal)?
    }

    async fn fields(&self, principal: &Principal, range: &TimeRange) -> Result<Vec<FieldInfo>, BackendError> {
        let (me, p, r) = (self.me()?, principal.clone(), *range);
        tokio::task::spawn_blocking(move || me.fields_sync(&p, &r)).await.map_err(internal)?
    }

    async fn tail(&self, principal: &Principal, query: &Query) -> Result<TailStream, BackendError> {
        Ok(self.tail_sync(principal, query))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_intervals_are_round_and_bounded() {
        let h = 3_600_000_000_000i64;
        assert_eq!(auto_interval_ms(0, 24 * h, 60), 1_800_000);
        assert_eq!(auto_interval_ms(0, h, 60), 60_000);
        assert_eq!(auto_interval_ms(0, 60_000_000_000, 60), 1_000);
        assert!(bucket_count(0, 24 * h, 1_800_000_000_000) <= 60);
    }

    #[test]
    fn cursors_round_trip() {
        assert_eq!(decode_cursor(&encode_cursor((-5, 7))).unwrap(), (-5, 7));
        assert!(decode_cursor("x").is_err());
    }
}
