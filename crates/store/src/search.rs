//! Search, aggregations, fields and tail over the partitions: the
//! [`SearchBackend`] implementation of [`Store`].
//!
//! Every path ANDs the principal's filter into the engine query (see
//! [`crate::translate::principal_filter`]); the blocking work runs on
//! tokio's blocking pool. Searches and aggregations go segment by segment
//! through a [`Plan`] (time bounds, best-first order, result cache), the
//! segments a request reads whole on the store's search threads
//! ([`Plan::map`]);
//! [`crate::reference`] keeps the straightforward evaluation the tests
//! compare them with.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use sluice_query::api::{Aggregate, Search};
use sluice_query::{
    AggregateResponse, Aggregation, AggregationResult, BackendError, Bucket, FieldInfo, FieldType, Hit, Order,
    Principal, Query, SearchBackend, SearchResponse, Stats, TailStream, TimeRange,
};
use tantivy::schema::Value as _;
use tantivy::{DocAddress, Searcher, TantivyDocument};
use tracing::info_span;

use crate::aggs::{combine, Fused};
use crate::cache::{Value, What};
use crate::collect::{rank, SortKey, StatsAcc, TermKey};
use crate::fields::FieldsCollector;
use crate::plan::{bad, internal, Plan, Seg};
use crate::render;
use crate::schema::names;
use crate::store::Store;
use crate::translate::full_query;

pub use sluice_query::histogram::{
    auto_interval_ms, bucket_count, histogram_layout, histogram_result, parse_interval, HistogramLayout,
    AUTO_INTERVALS_MS, DEFAULT_BUCKETS, MAX_BUCKETS,
};

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

pub(crate) fn term_key_json(k: &TermKey) -> serde_json::Value {
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
pub(crate) fn column_of(field: &str, kind: &str) -> Result<String, BackendError> {
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

/// The column of a stats aggregation: numbers live in `attrs` only.
pub(crate) fn stats_column(field: &str, name: &str) -> Result<String, BackendError> {
    let col = column_of(field, name)?;
    if !col.starts_with(names::ATTRS) {
        return Err(BackendError::BadRequest(format!("{name}: {field} is not numeric")));
    }
    Ok(col)
}

/// The response of a terms aggregation.
pub(crate) fn terms_result(top: Vec<(TermKey, u64)>, other: u64) -> AggregationResult {
    let buckets = top.into_iter().map(|(k, count)| Bucket { key: term_key_json(&k), count }).collect();
    AggregationResult::Terms { buckets, other }
}

/// The response of a stats aggregation.
pub(crate) fn stats_result(acc: &StatsAcc) -> AggregationResult {
    let some = acc.values > 0;
    AggregationResult::Stats(Stats {
        count: acc.events,
        min: some.then_some(acc.min),
        max: some.then_some(acc.max),
        avg: some.then(|| acc.sum / acc.values as f64),
        sum: acc.sum,
    })
}

/// The hit at `addr`: its stored event, with the selected fields only (or a
/// stand-in with an error when the stored text is not JSON).
pub(crate) fn hit_of(
    store: &Store,
    searcher: &Searcher,
    addr: DocAddress,
    key: SortKey,
    fields: Option<&[String]>,
) -> Result<Hit, BackendError> {
    let doc: TantivyDocument = searcher.doc(addr).map_err(internal)?;
    let text = doc.get_first(store.fields.src).and_then(|v| v.as_str()).unwrap_or_default();
    // A document that does not read back as JSON is a counted stand-in with
    // an error, never a failed page (ADR 0055).
    let mut hit = render::hit(key.1.to_string(), text.as_bytes(), key.0, &store.counters.unrenderable);
    if let (Some(f), None) = (fields, &hit.error) {
        hit.event = select_fields(hit.event, f);
    }
    Ok(hit)
}

/// What one aggregation of a request computes per segment.
enum Prepared {
    Histogram(HistogramLayout),
    Terms(String, usize),
    Stats(String),
}

impl Prepared {
    fn what(&self) -> Option<What> {
        match self {
            Prepared::Histogram(l) if l.buckets > 0 => Some(What::Histogram(l.interval_ns())),
            Prepared::Histogram(_) => None,
            Prepared::Terms(c, _) => Some(What::Terms(c.clone())),
            Prepared::Stats(c) => Some(What::Stats(c.clone())),
        }
    }
}

/// The values of `needs` over segment `s`: from the cache where it has
/// them, the rest in one pass, kept for next time.
fn segment_values(plan: &Plan<'_>, s: &Seg, needs: &[What], lo: i64, hi: i64) -> Result<Vec<Value>, BackendError> {
    if needs == [What::Count] {
        return Ok(vec![Value::Count(plan.count(s)?)]);
    }
    let mut out: Vec<Option<Value>> = needs.iter().map(|w| plan.cached(s, w)).collect();
    let missing: Vec<What> = needs.iter().zip(&out).filter(|(_, v)| v.is_none()).map(|(w, _)| w.clone()).collect();
    if !missing.is_empty() {
        let fused = Fused { needs: missing.clone(), lo, hi, ts: Some(plan.time(s)?.ts) };
        let computed = if plan.all_docs(s) {
            fused.collect_all(s.ord, plan.reader(s)).map_err(internal)?
        } else {
            plan.collect(s, &fused)?
        };
        let mut computed = missing.into_iter().zip(computed);
        for slot in out.iter_mut().filter(|v| v.is_none()) {
            if let Some((w, v)) = computed.next() {
                plan.keep(s, w, v.clone());
                *slot = Some(v);
            }
        }
    }
    out.into_iter().map(|v| v.ok_or_else(|| internal("segment result missing"))).collect()
}

/// The values of `needs` over every segment of the plan, `_ts` in
/// `[lo, hi]`. The results merged over the segments wholly inside the range
/// come from the cache as one entry when the set of those segments is the
/// one they were kept for (else per segment, and the merge is kept); the
/// segments across a bound are always read.
fn gather(plan: &Plan<'_>, needs: &[What], lo: i64, hi: i64) -> Result<Vec<Value>, BackendError> {
    let set = plan.whole_set();
    let merged: Vec<Option<Value>> =
        needs.iter().map(|w| set.as_ref().and_then(|set| plan.cached_set(set, w))).collect();
    let mut whole: Vec<Vec<Value>> = vec![Vec::new(); needs.len()];
    let mut partial: Vec<Vec<Value>> = vec![Vec::new(); needs.len()];
    let jobs: Vec<(&Seg, Vec<usize>)> = plan
        .segments()
        .iter()
        .map(|s| (s, (0..needs.len()).filter(|&i| !(s.whole && merged[i].is_some())).collect::<Vec<usize>>()))
        .filter(|(_, idx)| !idx.is_empty())
        .collect();
    let done = plan.map(jobs, |(s, idx)| {
        let want: Vec<What> = idx.iter().map(|&i| needs[i].clone()).collect();
        Ok((s.whole, idx, segment_values(plan, s, &want, lo, hi)?))
    })?;
    for (is_whole, idx, values) in done {
        for (i, v) in idx.into_iter().zip(values) {
            let into = if is_whole { &mut whole } else { &mut partial };
            into[i].push(v);
        }
    }
    let mut out = Vec::with_capacity(needs.len());
    for (i, (w, m)) in needs.iter().zip(merged).enumerate() {
        let inside = match m {
            Some(v) => v,
            None => {
                let v = combine(w, std::mem::take(&mut whole[i]));
                if let Some(set) = &set {
                    plan.keep_set(set, w.clone(), v.clone());
                }
                v
            }
        };
        out.push(combine(w, std::iter::once(inside).chain(std::mem::take(&mut partial[i]))));
    }
    Ok(out)
}

impl Store {
    /// A page of hits, newest (or oldest) first (blocking).
    ///
    /// Segments are visited best first (newest `_ts` first); once the page
    /// (plus one hit, to know whether there is a next page) holds hits
    /// better than anything the next segment can hold, the rest are only
    /// counted. The hits, their order and the cursor are those of
    /// [`crate::reference::search`].
    pub fn search_sync(&self, principal: &Principal, search: &Search) -> Result<SearchResponse, BackendError> {
        let span = info_span!("store_search", principal = %principal.name);
        let _g = span.enter();
        if let Some(by) = &search.sort {
            return crate::sort::search_sorted(self, principal, search, by);
        }
        let t0 = Instant::now();
        let oldest = search.order == Order::Oldest;
        let after = search.search_after.as_deref().map(decode_cursor).transpose()?.map(|a| rank(a, oldest));
        let plan = Plan::new(self, principal, &search.query, search.range.from_ns, search.range.to_ns)?;
        let k = search.size + 1;
        let mut total = 0u64;
        // (ranked key, segment index in `order`, doc), best first.
        let mut cands: Vec<(SortKey, usize, tantivy::DocId)> = Vec::new();
        let order = plan.by_rank(oldest);
        let mut visited = 0;
        for (i, s) in order.iter().enumerate() {
            if cands.len() >= k && cands[k - 1].0 .0 > Plan::best_ts(s, oldest) {
                break; // neither this segment nor any after it has a better hit
            }
            visited = i + 1;
            if after.is_some_and(|a| Plan::worst_ts(s, oldest) > a.0) {
                total += plan.count(s)?; // every event of it ranks before the cursor
                continue;
            }
            let (count, hits) = plan.top(s, k, after, oldest)?;
            total += count;
            cands.extend(hits.iter().map(|&(key, doc)| (key, i, doc)));
            cands.sort_unstable_by_key(|c| std::cmp::Reverse(c.0));
            cands.truncate(k);
        }
        total += plan.map(order[visited..].iter().collect(), |s| plan.count(s))?.into_iter().sum::<u64>();
        let more = cands.len() > search.size;
        cands.truncate(search.size);
        let mut hits = Vec::with_capacity(cands.len());
        for &(key, i, doc) in &cands {
            let s = &order[i];
            let addr = DocAddress::new(s.ord, doc);
            hits.push(hit_of(self, plan.searcher(s), addr, rank(key, oldest), search.fields.as_deref())?);
        }
        let next = if more { cands.last().map(|c| encode_cursor(rank(c.0, oldest))) } else { None };
        Ok(SearchResponse { total, hits, next, took_ms: t0.elapsed().as_millis() as u64 })
    }

    /// Aggregations (blocking): one pass per segment for all of them and the
    /// count, per-segment results from the result cache where the segment
    /// lies wholly inside the range. The results are those of
    /// [`crate::reference::aggregate`].
    pub fn aggregate_sync(&self, principal: &Principal, agg: &Aggregate) -> Result<AggregateResponse, BackendError> {
        let span = info_span!("store_aggregate", principal = %principal.name);
        let _g = span.enter();
        let t0 = Instant::now();
        let (from, to) = (agg.range.from_ns, agg.range.to_ns);
        let plan = Plan::new(self, principal, &agg.query, from, to)?;
        let (lo, hi) = (from.unwrap_or(i64::MIN), to.map_or(i64::MAX, |t| t.saturating_sub(1)));
        // Bounds of the histogram: the request's range, else the matches' extent.
        let mut total: Option<u64> = None;
        let mut extent: Option<(i64, i64)> = None;
        let needs_hist = agg.aggs.values().any(|a| matches!(a, Aggregation::DateHistogram { .. }));
        if needs_hist && (from.is_none() || to.is_none()) {
            if let [Value::MinMax((c, l, h))] = gather(&plan, &[What::MinMax], lo, hi)?[..] {
                total = Some(c);
                if c > 0 {
                    extent = Some((from.unwrap_or(l), to.unwrap_or(h.saturating_add(1))));
                }
            }
        } else if let (Some(f), Some(t)) = (from, to) {
            extent = Some((f, t));
        }
        let mut prepared = Vec::with_capacity(agg.aggs.len());
        for (name, a) in &agg.aggs {
            prepared.push(match a {
                Aggregation::DateHistogram { interval, buckets } => {
                    Prepared::Histogram(histogram_layout(name, interval.as_deref(), *buckets, extent)?)
                }
                Aggregation::Terms { field, size } => Prepared::Terms(column_of(field, name)?, size.unwrap_or(10)),
                Aggregation::Stats { field } => Prepared::Stats(stats_column(field, name)?),
            });
        }
        let mut needs: Vec<What> = Vec::new();
        for w in prepared.iter().filter_map(Prepared::what) {
            if !needs.contains(&w) {
                needs.push(w);
            }
        }
        if total.is_none() {
            needs.push(What::Count);
        }
        let values = gather(&plan, &needs, lo, hi)?;
        let value_of = |w: &What| needs.iter().position(|n| n == w).and_then(|i| values.get(i));
        let total = match (total, value_of(&What::Count)) {
            (Some(t), _) => t,
            (None, Some(Value::Count(c))) => *c,
            _ => return Err(internal("count missing")),
        };
        let mut out = BTreeMap::new();
        for ((name, _), p) in agg.aggs.iter().zip(&prepared) {
            let v = p.what().as_ref().and_then(value_of);
            let r = match (p, v) {
                (Prepared::Histogram(layout), v) => {
                    let mut counts = vec![0u64; layout.buckets];
                    if let Some(Value::Histogram(h)) = v {
                        let first = layout.origin_ns.div_euclid(layout.interval_ns());
                        let last = counts.len() as i64 - 1;
                        for (j, c) in h.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
                            counts[(h.first + j as i64 - first).clamp(0, last) as usize] += c;
                        }
                    }
                    histogram_result(layout, counts)
                }
                (Prepared::Terms(_, size), Some(Value::Terms(t))) => {
                    let (top, other) = t.top(*size);
                    terms_result(top, other)
                }
                (Prepared::Stats(_), Some(Value::Stats(acc))) => stats_result(acc),
                _ => return Err(internal("aggregation result missing")),
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
            let searcher = p.reader.searcher();
            let scoring = tantivy::query::EnableScoring::disabled_from_searcher(&searcher);
            let found = searcher.search_with_executor(&*query, &collector, &self.search_pool, scoring);
            for (name, ty) in found.map_err(internal)? {
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

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.counters;
        let r = &self.cache.counters;
        let load = |a: &std::sync::atomic::AtomicU64| a.load(AtomicOrdering::Relaxed);
        let (entries, bytes) = self.cache.usage();
        // One snapshot of the partitions for the three "what the store holds" figures.
        let parts = self.partitions();
        vec![
            ("sluice_store_events_total", load(&c.events)),
            ("sluice_store_commits_total", load(&c.commits)),
            ("sluice_store_commit_errors_total", load(&c.commit_errors)),
            ("sluice_store_partitions_dropped_total", load(&c.partitions_dropped)),
            ("sluice_store_retention_events_total", load(&c.retention_events)),
            ("sluice_store_tail_dropped_total", load(&c.tail_dropped)),
            ("sluice_store_replayed_events_skipped_total", load(&c.replayed_skipped)),
            ("sluice_store_positions_dropped_total", load(&c.positions_dropped)),
            ("sluice_store_result_cache_hits_total", load(&r.hits)),
            ("sluice_store_result_cache_misses_total", load(&r.misses)),
            ("sluice_store_result_cache_inserts_total", load(&r.inserts)),
            ("sluice_store_result_cache_evictions_total", load(&r.evictions)),
            ("sluice_store_result_cache_entries", entries as u64),
            ("sluice_store_result_cache_bytes", bytes as u64),
            // What the store holds (issue #22, Operations page).
            ("sluice_store_disk_bytes", parts.iter().map(|p| p.bytes).sum()),
            ("sluice_store_partitions", parts.len() as u64),
            ("sluice_store_stored_events", parts.iter().map(|p| p.events).sum()),
        ]
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
