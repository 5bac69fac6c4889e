//! The reference evaluation of searches and aggregations: every partition
//! with the full query, one collector pass over all its segments per
//! aggregation (plus one to count), terms looked up one ordinal at a time,
//! no early termination, no cache.
//!
//! This is what the store did before the planned paths of
//! [`Store::search_sync`] and [`Store::aggregate_sync`] (issue #26); it is
//! kept, small and obviously right, as the oracle the tests compare those
//! paths with, and as the "before" of `examples/store_bench.rs`.

use std::collections::{BTreeMap, HashMap};

use sluice_query::api::{Aggregate, Search};
use sluice_query::{AggregateResponse, Aggregation, BackendError, Order, Principal, SearchResponse};
use tantivy::collector::Count;

use crate::collect::{
    rank, HistogramCollector, MinMaxCollector, SortKey, StatsAcc, StatsCollector, TermKey, TermsCollector, TopCollector,
};
use crate::plan::{bad, internal};
use crate::search::{
    column_of, decode_cursor, encode_cursor, histogram_layout, histogram_result, hit_of, stats_column, stats_result,
    terms_result,
};
use crate::store::Store;
use crate::translate::full_query;

/// A page of hits (reference path; see the module docs).
pub fn search(store: &Store, principal: &Principal, search: &Search) -> Result<SearchResponse, BackendError> {
    let t0 = std::time::Instant::now();
    let oldest = search.order == Order::Oldest;
    let after = search.search_after.as_deref().map(decode_cursor).transpose()?.map(|a| rank(a, oldest));
    let (from, to) = (search.range.from_ns, search.range.to_ns);
    let query = full_query(&store.fields, principal, &search.query, from, to).map_err(bad)?;
    let k = search.size + 1;
    let mut total = 0u64;
    let mut cands: Vec<(SortKey, usize, tantivy::DocAddress)> = Vec::new();
    let mut searchers = Vec::new();
    for (i, p) in store.partitions_for(from, to).iter().enumerate() {
        let searcher = p.reader.searcher();
        let (count, hits) =
            searcher.search(&*query, &TopCollector { k, after, oldest, time: None }).map_err(internal)?;
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
        hits.push(hit_of(store, &searchers[*i], *addr, rank(*key, oldest), search.fields.as_deref())?);
    }
    let next = if more { cands.last().map(|c| encode_cursor(rank(c.0, oldest))) } else { None };
    Ok(SearchResponse { total, hits, next, took_ms: t0.elapsed().as_millis() as u64 })
}

/// Aggregations (reference path; see the module docs).
pub fn aggregate(store: &Store, principal: &Principal, agg: &Aggregate) -> Result<AggregateResponse, BackendError> {
    let t0 = std::time::Instant::now();
    let (from, to) = (agg.range.from_ns, agg.range.to_ns);
    let query = full_query(&store.fields, principal, &agg.query, from, to).map_err(bad)?;
    let searchers: Vec<_> = store.partitions_for(from, to).iter().map(|p| p.reader.searcher()).collect();
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
                let layout = histogram_layout(name, interval.as_deref(), *buckets, extent)?;
                let mut counts = vec![0u64; layout.buckets];
                if layout.buckets > 0 {
                    let c = HistogramCollector {
                        origin_ns: layout.origin_ns,
                        interval_ns: layout.interval_ns(),
                        buckets: layout.buckets,
                    };
                    for s in &searchers {
                        for (o, v) in counts.iter_mut().zip(s.search(&*query, &c).map_err(internal)?) {
                            *o += v;
                        }
                    }
                }
                histogram_result(&layout, counts)
            }
            Aggregation::Terms { field, size } => {
                let c = TermsCollector { column: column_of(field, name)? };
                let mut all: HashMap<TermKey, u64> = HashMap::new();
                for s in &searchers {
                    for (k, v) in s.search(&*query, &c).map_err(internal)? {
                        *all.entry(k).or_default() += v;
                    }
                }
                let mut v: Vec<(TermKey, u64)> = all.into_iter().collect();
                v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                let size = size.unwrap_or(10);
                let other = v.iter().skip(size).map(|x| x.1).sum();
                v.truncate(size);
                terms_result(v, other)
            }
            Aggregation::Stats { field } => {
                let c = StatsCollector { column: stats_column(field, name)? };
                let mut acc = StatsAcc::empty();
                for s in &searchers {
                    acc.merge(&s.search(&*query, &c).map_err(internal)?);
                }
                stats_result(&acc)
            }
        };
        out.insert(name.clone(), r);
    }
    Ok(AggregateResponse { total, aggs: out, took_ms: t0.elapsed().as_millis() as u64 })
}
