//! The result cache: per-segment partial results of searches and
//! aggregations, kept across requests.
//!
//! A committed tantivy segment never changes (the store deletes no single
//! event; retention drops whole partitions), so what a query computed over
//! one segment stays true as long as that segment exists. The cache keeps
//! those partial results — a count, the `_ts` extent, the counted terms, a
//! histogram, numeric stats, a segment's best hits — for segments that lie **wholly inside**
//! the request's time range, keyed by
//!
//! - the segment's id (a new commit adds a segment with a new id; a merge
//!   replaces segments by one with a new id; so new data is never answered
//!   from the cache, and the entries of merged-away segments simply stop
//!   being asked for and age out) — or, for an aggregation's results merged
//!   over all the segments wholly inside its range, the sorted set of their
//!   ids (the same request again costs one lookup; a new segment changes
//!   the set, and the request falls back to the per-segment entries),
//! - the *scope*: the query and the principal's source patterns (the
//!   principal filter is part of what was computed, so a result is only
//!   ever reused for a principal allowed to read exactly the same events),
//! - what was computed (count, terms of a column, histogram interval, …).
//!
//! The time range is not in the key: a segment wholly inside the range
//! holds the same matches whatever the range's exact bounds, so a dashboard
//! that refreshes "the last 24 hours" recomputes only the segments at the
//! edges of its window and the new ones.
//!
//! Bounded by entries and by bytes (an estimate of each value's heap size),
//! least recently used first out; hits, misses, insertions and evictions are
//! counted (`sluice_store_result_cache_*`).

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lru::LruCache;
use parking_lot::Mutex;
use tantivy::index::SegmentId;
use tantivy::DocId;

use crate::collect::{MinMax, SortKey, StatsAcc};
use crate::terms::TermCounts;

/// What a cached value is the result of.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum What {
    /// Matching events.
    Count,
    /// Matching events and their smallest and largest `_ts`.
    MinMax,
    /// Terms of a column.
    Terms(String),
    /// Histogram of `_ts` with this bucket width (ns); buckets aligned to
    /// multiples of it.
    Histogram(i64),
    /// Numeric stats of a column.
    Stats(String),
    /// The best `k` hits of the segment in `order` (`true`: oldest first)
    /// strictly after `after`.
    Top { k: usize, after: Option<SortKey>, oldest: bool },
}

/// A segment as a key names it: its id and its number of deleted
/// documents (always 0 today: the store deletes no single event).
pub type SegmentVersion = (SegmentId, u32);

/// Key of one cached result: of one segment, or merged over a set of
/// segments (sorted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    segments: Arc<[SegmentVersion]>,
    scope: Arc<str>,
    what: What,
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.segments.hash(state);
        self.scope.hash(state);
        self.what.hash(state);
    }
}

impl Key {
    /// The key of `what` over `segments` (one, or a sorted set whose results
    /// were merged) for the scope `scope` (see [`scope`]).
    pub fn new(segments: Arc<[SegmentVersion]>, scope: Arc<str>, what: What) -> Self {
        Self { segments, scope, what }
    }
}

/// The scope string of a query run for a principal: the query and the
/// principal's source patterns, exactly (not its name: two principals with
/// the same patterns read the same events).
pub fn scope(principal: &sluice_query::Principal, query: &sluice_query::Query) -> Arc<str> {
    Arc::from(format!("{:?}\u{0}{:?}", principal.allowed, query))
}

/// A sparse histogram of one segment: counts of consecutive buckets from
/// `first` (bucket index = `ts.div_euclid(interval)`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SegmentHistogram {
    /// Index of the first bucket.
    pub first: i64,
    /// Counts from there.
    pub counts: Vec<u64>,
}

/// A segment's best hits: (ranked key, document), best first.
pub type SegmentHits = Arc<Vec<(SortKey, DocId)>>;

/// A cached value.
#[derive(Clone, Debug)]
pub enum Value {
    /// See [`What::Count`].
    Count(u64),
    /// See [`What::MinMax`].
    MinMax(MinMax),
    /// See [`What::Terms`].
    Terms(Arc<TermCounts>),
    /// See [`What::Histogram`].
    Histogram(Arc<SegmentHistogram>),
    /// See [`What::Stats`].
    Stats(StatsAcc),
    /// See [`What::Top`].
    Top(SegmentHits),
}

impl Value {
    fn bytes(&self, key: &Key) -> usize {
        let own = match self {
            Value::Count(_) | Value::MinMax(_) | Value::Stats(_) => 0,
            Value::Terms(t) => t.heap_bytes(),
            Value::Histogram(h) => h.counts.len() * 8,
            Value::Top(t) => t.len() * 24,
        };
        // The entry itself, the LRU's links and the key (the scope string is shared).
        own + 160
            + key.segments.len() * 20
            + match &key.what {
                What::Terms(c) | What::Stats(c) => c.len(),
                _ => 0,
            }
    }
}

/// Counters of the cache.
#[derive(Debug, Default)]
pub struct CacheCounters {
    /// `sluice_store_result_cache_hits_total`.
    pub hits: AtomicU64,
    /// `sluice_store_result_cache_misses_total`.
    pub misses: AtomicU64,
    /// `sluice_store_result_cache_inserts_total`.
    pub inserts: AtomicU64,
    /// `sluice_store_result_cache_evictions_total`.
    pub evictions: AtomicU64,
}

struct Inner {
    lru: LruCache<Key, (Value, usize)>,
    bytes: usize,
}

/// The cache; see the module docs. Disabled when either bound is 0.
pub struct ResultCache {
    inner: Mutex<Inner>,
    max_entries: usize,
    max_bytes: usize,
    /// Counters.
    pub counters: CacheCounters,
}

impl ResultCache {
    /// A cache of at most `max_entries` entries and `max_bytes` bytes.
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            inner: Mutex::new(Inner { lru: LruCache::unbounded(), bytes: 0 }),
            max_entries,
            max_bytes,
            counters: CacheCounters::default(),
        }
    }

    /// Whether anything is ever kept.
    pub fn enabled(&self) -> bool {
        self.max_entries > 0 && self.max_bytes > 0
    }

    /// The value for `key`, counting a hit or a miss.
    pub fn get(&self, key: &Key) -> Option<Value> {
        if !self.enabled() {
            return None;
        }
        let v = self.inner.lock().lru.get(key).map(|(v, _)| v.clone());
        let c = if v.is_some() { &self.counters.hits } else { &self.counters.misses };
        c.fetch_add(1, Ordering::Relaxed);
        v
    }

    /// Keeps `value` for `key`, evicting the least recently used entries
    /// beyond the bounds. A value larger than an eighth of the byte bound is
    /// not kept.
    pub fn put(&self, key: Key, value: Value) {
        if !self.enabled() {
            return;
        }
        let size = value.bytes(&key);
        if size > self.max_bytes / 8 {
            return;
        }
        let mut inner = self.inner.lock();
        if let Some((_, old)) = inner.lru.put(key, (value, size)) {
            inner.bytes -= old;
        }
        inner.bytes += size;
        self.counters.inserts.fetch_add(1, Ordering::Relaxed);
        while inner.lru.len() > self.max_entries || inner.bytes > self.max_bytes {
            match inner.lru.pop_lru() {
                Some((_, (_, n))) => {
                    inner.bytes -= n;
                    self.counters.evictions.fetch_add(1, Ordering::Relaxed);
                }
                None => break,
            }
        }
    }

    /// (entries, bytes) held now.
    pub fn usage(&self) -> (usize, usize) {
        let inner = self.inner.lock();
        (inner.lru.len(), inner.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32, what: What) -> Key {
        Key::new(Arc::from([(SegmentId::generate_random(), i)]), Arc::from("scope"), what)
    }

    #[test]
    fn bounded_by_entries_least_recently_used_first() {
        let c = ResultCache::new(2, 1 << 20);
        let (a, b, d) = (key(0, What::Count), key(0, What::Count), key(0, What::Count));
        c.put(a.clone(), Value::Count(1));
        c.put(b.clone(), Value::Count(2));
        assert!(matches!(c.get(&a), Some(Value::Count(1))));
        c.put(d.clone(), Value::Count(3));
        assert!(c.get(&b).is_none(), "b was the least recently used");
        assert!(c.get(&a).is_some() && c.get(&d).is_some());
        assert_eq!(c.counters.evictions.load(Ordering::Relaxed), 1);
        assert_eq!(c.counters.hits.load(Ordering::Relaxed), 3);
        assert_eq!(c.counters.misses.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn bounded_by_bytes() {
        let c = ResultCache::new(1000, 8 * 1000);
        for i in 0..100 {
            c.put(
                key(i, What::Histogram(1)),
                Value::Histogram(Arc::new(SegmentHistogram { first: 0, counts: vec![1; 10] })),
            );
        }
        let (n, bytes) = c.usage();
        assert!(bytes <= 8000, "{bytes}");
        assert_eq!(n, 8000 / (80 + 160 + 20));
        // Too large for the budget: not kept.
        c.put(key(7, What::Count), Value::Histogram(Arc::new(SegmentHistogram { first: 0, counts: vec![1; 200] })));
        assert_eq!(c.usage().0, n);
    }

    #[test]
    fn disabled_keeps_nothing_and_counts_nothing() {
        let c = ResultCache::new(10, 0);
        let k = key(0, What::Count);
        c.put(k.clone(), Value::Count(1));
        assert!(c.get(&k).is_none());
        assert_eq!(c.counters.misses.load(Ordering::Relaxed), 0);
    }
}
