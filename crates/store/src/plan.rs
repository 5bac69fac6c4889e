//! Which segments a request reads, in which order, with which query, and
//! through the result cache.
//!
//! A [`Plan`] lists the segments of the partitions overlapping the request's
//! time range with each segment's `_ts` bounds (column statistics, no scan):
//!
//! - a segment wholly **outside** the range is not read at all;
//! - a segment wholly **inside** it is read with the query *without* the
//!   time clause (same matches, one clause less per document), and its
//!   partial results go through the [`ResultCache`]; when the principal may
//!   read everything and the query is `*`, its count is its number of
//!   documents and aggregations read its columns without the query
//!   ([`Plan::all_docs`]);
//! - a segment **across** a bound is read with the full query and never
//!   cached (its matches depend on the exact bounds).
//!
//! Searches visit the segments best first ([`Plan::by_rank`]: newest `_ts`
//! first for "newest first") and stop collecting hits once the page is full
//! with hits better than anything the next segment can hold; the segments
//! not visited are only counted.

use std::collections::HashSet;
use std::sync::Arc;

use sluice_query::{BackendError, Principal, Query};
use tantivy::collector::Collector;
use tantivy::query::{EnableScoring, Scorer, Weight};
use tantivy::{Searcher, SegmentReader};

use crate::cache::{scope, Key, ResultCache, SegmentHits, SegmentVersion, Value, What};
use crate::collect::{rank, SortKey, TopCollector};
use crate::store::Store;
use crate::time_columns::{SegmentTime, TimeColumns};
use crate::translate::{full_query, TranslateError};

pub(crate) fn internal(e: impl std::fmt::Display) -> BackendError {
    BackendError::Internal(e.to_string())
}

pub(crate) fn bad(e: TranslateError) -> BackendError {
    BackendError::BadRequest(e.0)
}

/// One segment of one partition as a request sees it.
#[derive(Clone, Copy, Debug)]
pub struct Seg {
    /// Index of its partition in the plan.
    pub part: usize,
    /// Segment ordinal in its partition's searcher.
    pub ord: u32,
    /// Smallest `_ts`.
    pub min_ts: i64,
    /// Largest `_ts`.
    pub max_ts: i64,
    /// Every event of the segment lies inside the request's time range.
    pub whole: bool,
}

struct Part {
    searcher: Searcher,
    /// Its partition's opened `_ts` and `_seq` columns.
    time: Arc<TimeColumns>,
    /// The query with its time clause, for segments across a bound.
    bounded: Box<dyn Weight>,
    /// The query without it, for segments wholly inside the range.
    unbounded: Box<dyn Weight>,
}

/// The segments a request reads; see the module docs.
pub struct Plan<'c> {
    parts: Vec<Part>,
    segs: Vec<Seg>,
    scope: Arc<str>,
    everything: bool,
    cache: &'c ResultCache,
    pool: &'c tantivy::Executor,
}

/// Whether `p` may read every event (a pattern of `*`, `*`, `*`).
fn reads_everything(p: &Principal) -> bool {
    p.allowed.iter().any(|s| s.group.is_any() && s.subgroup.is_any() && s.host.is_any())
}

impl<'c> Plan<'c> {
    /// The plan of `query` for `principal` over `[from, to)` in `store`.
    pub fn new(
        store: &'c Store,
        principal: &Principal,
        query: &Query,
        from: Option<i64>,
        to: Option<i64>,
    ) -> Result<Self, BackendError> {
        let bounded_q = full_query(&store.fields, principal, query, from, to).map_err(bad)?;
        let windowed = from.is_some() || to.is_some();
        let unbounded_q =
            if windowed { Some(full_query(&store.fields, principal, query, None, None).map_err(bad)?) } else { None };
        let (lo, hi) = (from.unwrap_or(i64::MIN), to.unwrap_or(i64::MAX));
        let mut parts = Vec::new();
        let mut segs = Vec::new();
        for p in store.partitions_for(from, to) {
            let searcher = p.reader.searcher();
            let scoring = EnableScoring::disabled_from_searcher(&searcher);
            let bounded = bounded_q.weight(scoring).map_err(internal)?;
            let unbounded = match &unbounded_q {
                Some(q) => q.weight(scoring).map_err(internal)?,
                None => bounded_q.weight(scoring).map_err(internal)?,
            };
            let part = parts.len();
            let mut live = HashSet::with_capacity(searcher.segment_readers().len());
            for (ord, reader) in searcher.segment_readers().iter().enumerate() {
                live.insert(reader.segment_id());
                if reader.num_docs() == 0 {
                    continue;
                }
                let ts = p.time_columns.get(reader).map_err(internal)?.ts;
                let (min_ts, max_ts) = (ts.min_value(), ts.max_value());
                if max_ts < lo || min_ts >= hi {
                    continue;
                }
                let whole = lo <= min_ts && max_ts < hi;
                segs.push(Seg { part, ord: ord as u32, min_ts, max_ts, whole });
            }
            p.time_columns.retain(&live);
            parts.push(Part { searcher, time: Arc::clone(&p.time_columns), bounded, unbounded });
        }
        let everything = *query == Query::All && reads_everything(principal);
        Ok(Self {
            parts,
            segs,
            scope: scope(principal, query),
            everything,
            cache: &store.cache,
            pool: &store.search_pool,
        })
    }

    /// `f` of every item, in order, on the store's search threads (each
    /// item a segment's work: segments are independent, and one request
    /// over 100 M events reads tens of them); the first error is returned.
    pub fn map<A: Send, R: Send>(
        &self,
        items: Vec<A>,
        f: impl Fn(A) -> Result<R, BackendError> + Sync,
    ) -> Result<Vec<R>, BackendError> {
        if items.len() < 2 {
            return items.into_iter().map(f).collect();
        }
        self.pool.map(|a| Ok(f(a)), items.into_iter()).map_err(internal)?.into_iter().collect()
    }

    /// The segments read.
    pub fn segments(&self) -> &[Seg] {
        &self.segs
    }

    /// The segments best first for a search: by largest `_ts` for newest
    /// first, by smallest for oldest first.
    pub fn by_rank(&self, oldest: bool) -> Vec<Seg> {
        let mut v = self.segs.clone();
        if oldest {
            v.sort_by_key(|s| (s.min_ts, s.part, s.ord));
        } else {
            v.sort_by_key(|s| (std::cmp::Reverse(s.max_ts), s.part, s.ord));
        }
        v
    }

    /// Whether every document of `s` matches: the query is `*`, the
    /// principal reads everything, the segment lies wholly inside the range
    /// and has no deleted document (the store deletes none).
    pub fn all_docs(&self, s: &Seg) -> bool {
        self.everything && s.whole && self.reader(s).num_deleted_docs() == 0
    }

    /// The segment's reader.
    pub fn reader(&self, s: &Seg) -> &SegmentReader {
        self.parts[s.part].searcher.segment_reader(s.ord)
    }

    /// The segment's `_ts` and `_seq` columns (opened when the plan was made).
    pub fn time(&self, s: &Seg) -> Result<SegmentTime, BackendError> {
        self.parts[s.part].time.get(self.reader(s)).map_err(internal)
    }

    /// The searcher of the segment's partition.
    pub fn searcher(&self, s: &Seg) -> &Searcher {
        &self.parts[s.part].searcher
    }

    fn weight(&self, s: &Seg) -> &dyn Weight {
        let p = &self.parts[s.part];
        if s.whole {
            &*p.unbounded
        } else {
            &*p.bounded
        }
    }

    fn key(&self, s: &Seg, what: What) -> Key {
        let reader = self.reader(s);
        Key::new(Arc::from([(reader.segment_id(), reader.num_deleted_docs())]), Arc::clone(&self.scope), what)
    }

    /// The cached result of `what` over `s` (segments wholly inside the
    /// range only); the count of a segment whose every event matches is its
    /// number of events.
    pub fn cached(&self, s: &Seg, what: &What) -> Option<Value> {
        if !s.whole {
            return None;
        }
        if *what == What::Count && self.everything {
            return Some(Value::Count(u64::from(self.reader(s).num_docs())));
        }
        self.cache.get(&self.key(s, what.clone()))
    }

    /// Keeps the result of `what` over `s` (segments wholly inside the range only).
    pub fn keep(&self, s: &Seg, what: What, value: Value) {
        if s.whole && !(what == What::Count && self.everything) {
            self.cache.put(self.key(s, what), value);
        }
    }

    /// The segments wholly inside the range as a sorted set, the key of
    /// results merged over all of them; `None` for fewer than two (a
    /// segment's own entry serves then).
    pub fn whole_set(&self) -> Option<Arc<[SegmentVersion]>> {
        let mut set: Vec<SegmentVersion> = self
            .segs
            .iter()
            .filter(|s| s.whole)
            .map(|s| {
                let r = self.reader(s);
                (r.segment_id(), r.num_deleted_docs())
            })
            .collect();
        if set.len() < 2 {
            return None;
        }
        set.sort_unstable();
        Some(Arc::from(set))
    }

    /// The cached result of `what` merged over the segment set `set`.
    pub fn cached_set(&self, set: &Arc<[SegmentVersion]>, what: &What) -> Option<Value> {
        self.cache.get(&Key::new(Arc::clone(set), Arc::clone(&self.scope), what.clone()))
    }

    /// Keeps the result of `what` merged over the segment set `set`.
    pub fn keep_set(&self, set: &Arc<[SegmentVersion]>, what: What, value: Value) {
        self.cache.put(Key::new(Arc::clone(set), Arc::clone(&self.scope), what), value);
    }

    /// Runs `collector` over the segment with the right query.
    pub fn collect<C: Collector>(
        &self,
        s: &Seg,
        collector: &C,
    ) -> Result<<C::Child as tantivy::collector::SegmentCollector>::Fruit, BackendError> {
        collector.collect_segment(self.weight(s), s.ord, self.reader(s)).map_err(internal)
    }

    /// The segment's matching documents in order, positioned on the first;
    /// `None` when every document matches ([`Plan::all_docs`]). Deleted
    /// documents are not filtered out (the store deletes none).
    pub fn scorer(&self, s: &Seg) -> Result<Option<Box<dyn Scorer>>, BackendError> {
        if self.all_docs(s) {
            return Ok(None);
        }
        self.weight(s).scorer(self.reader(s), 1.0).map(Some).map_err(internal)
    }

    /// Matching events in the segment: its size when everything matches,
    /// else from the cache or counted.
    pub fn count(&self, s: &Seg) -> Result<u64, BackendError> {
        if let Some(Value::Count(n)) = self.cached(s, &What::Count) {
            return Ok(n);
        }
        let n = u64::from(self.weight(s).count(self.reader(s)).map_err(internal)?);
        self.keep(s, What::Count, Value::Count(n));
        Ok(n)
    }

    /// The segment's matching events and its `k` best hits strictly below
    /// the ranked `after` (see [`rank`]), best first, as (ranked key, doc).
    pub fn top(
        &self,
        s: &Seg,
        k: usize,
        after: Option<SortKey>,
        oldest: bool,
    ) -> Result<(u64, SegmentHits), BackendError> {
        let what = What::Top { k, after, oldest };
        if let Some(Value::Top(hits)) = self.cached(s, &what) {
            return Ok((self.count(s)?, hits));
        }
        let time = Some(self.time(s)?);
        let (count, hits) = self.collect(s, &TopCollector { k, after, oldest, time })?;
        let hits = Arc::new(hits.into_iter().map(|(key, addr)| (key, addr.doc_id)).collect::<Vec<_>>());
        self.keep(s, what, Value::Top(Arc::clone(&hits)));
        self.keep(s, What::Count, Value::Count(count));
        Ok((count, hits))
    }

    /// The best ranked `_ts` any event of `s` can have.
    pub fn best_ts(s: &Seg, oldest: bool) -> i64 {
        rank((if oldest { s.min_ts } else { s.max_ts }, 0), oldest).0
    }

    /// The worst ranked `_ts` any event of `s` can have.
    pub fn worst_ts(s: &Seg, oldest: bool) -> i64 {
        rank((if oldest { s.max_ts } else { s.min_ts }, 0), oldest).0
    }
}
