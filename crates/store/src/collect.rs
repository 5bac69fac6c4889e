//! Collectors over fast columns: newest-first top-k with a `search_after`
//! cursor, date histogram, terms and numeric stats. Each runs per segment
//! and merges exactly (counts are never estimated).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, DynamicColumn, NumericalType, StrColumn};
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader};

use crate::schema::names;
use crate::time_columns::SegmentTime;

/// Sort key of a hit: (`_ts`, `_seq`), compared descending for "newest first".
pub type SortKey = (i64, u64);

/// The key a search ranks by, descending: the hit's own key for newest
/// first; for oldest first both parts bit-inverted (`!x` reverses the order
/// of `i64` and `u64` alike, without overflow, and is its own inverse).
pub fn rank(key: SortKey, oldest: bool) -> SortKey {
    if oldest {
        (!key.0, !key.1)
    } else {
        key
    }
}

/// Counts every match and keeps the `k` best ranked hits strictly below
/// `after` (see [`rank`]).
pub struct TopCollector {
    /// Hits to keep.
    pub k: usize,
    /// Only ranks strictly less than this (the previous page's last hit, ranked).
    pub after: Option<SortKey>,
    /// Oldest first instead of newest first.
    pub oldest: bool,
    /// The segment's `_ts` and `_seq` columns when the caller has them
    /// opened (a plan's segment, [`crate::time_columns`]); else opened here.
    pub time: Option<SegmentTime>,
}

/// Result of [`TopCollector`]: total matches, and the top hits by rank,
/// best first (ranked keys: see [`rank`]).
pub type TopFruit = (u64, Vec<(SortKey, DocAddress)>);

/// Per-segment part of [`TopCollector`].
pub struct TopSegment {
    k: usize,
    after: Option<SortKey>,
    oldest: bool,
    ord: SegmentOrdinal,
    ts: Column<i64>,
    seq: Column<u64>,
    count: u64,
    heap: BinaryHeap<Reverse<(SortKey, DocId)>>,
    vals: Vec<Option<i64>>,
}

impl Collector for TopCollector {
    type Fruit = TopFruit;
    type Child = TopSegment;

    fn for_segment(&self, ord: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<TopSegment> {
        let time = match &self.time {
            Some(t) => t.clone(),
            None => SegmentTime::open(reader)?,
        };
        Ok(TopSegment {
            k: self.k,
            after: self.after,
            oldest: self.oldest,
            ord,
            ts: time.ts,
            seq: time.seq,
            count: 0,
            heap: BinaryHeap::with_capacity(self.k + 1),
            vals: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<TopFruit>) -> tantivy::Result<TopFruit> {
        let mut count = 0;
        let mut all = Vec::new();
        for (c, hits) in fruits {
            count += c;
            all.extend(hits);
        }
        all.sort_unstable_by_key(|h| Reverse(h.0));
        all.truncate(self.k);
        Ok((count, all))
    }
}

impl TopSegment {
    fn offer(&mut self, doc: DocId, ts: i64) {
        let ts = if self.oldest { !ts } else { ts };
        if self.heap.len() >= self.k {
            if let Some(Reverse(((min_ts, _), _))) = self.heap.peek() {
                if ts < *min_ts {
                    return;
                }
            }
        }
        if let Some((ats, _)) = self.after {
            if ts > ats {
                return;
            }
        }
        let seq = self.seq.first(doc).unwrap_or(0);
        let key = (ts, if self.oldest { !seq } else { seq });
        if self.after.is_some_and(|a| key >= a) {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(Reverse((key, doc)));
        } else if let Some(mut top) = self.heap.peek_mut() {
            if key > top.0 .0 {
                *top = Reverse((key, doc));
            }
        }
    }
}

impl SegmentCollector for TopSegment {
    type Fruit = TopFruit;

    fn collect(&mut self, doc: DocId, _score: Score) {
        self.count += 1;
        if self.k == 0 {
            return;
        }
        let ts = self.ts.first(doc).unwrap_or(0);
        self.offer(doc, ts);
    }

    fn collect_block(&mut self, docs: &[DocId]) {
        self.count += docs.len() as u64;
        if self.k == 0 {
            return;
        }
        let mut vals = std::mem::take(&mut self.vals);
        vals.clear();
        vals.resize(docs.len(), None);
        self.ts.first_vals(docs, &mut vals);
        for (&doc, ts) in docs.iter().zip(&vals) {
            self.offer(doc, ts.unwrap_or(0));
        }
        self.vals = vals;
    }

    fn harvest(self) -> TopFruit {
        let ord = self.ord;
        let mut hits: Vec<(SortKey, DocAddress)> =
            self.heap.into_iter().map(|Reverse((k, d))| (k, DocAddress::new(ord, d))).collect();
        hits.sort_unstable_by_key(|h| Reverse(h.0));
        (self.count, hits)
    }
}

/// Counts matches and their smallest and largest `_ts`.
pub struct MinMaxCollector;

/// (count, min ts, max ts).
pub type MinMax = (u64, i64, i64);

/// Per-segment part of [`MinMaxCollector`].
pub struct MinMaxSegment {
    ts: Column<i64>,
    acc: MinMax,
}

impl Collector for MinMaxCollector {
    type Fruit = MinMax;
    type Child = MinMaxSegment;

    fn for_segment(&self, _ord: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<MinMaxSegment> {
        Ok(MinMaxSegment { ts: reader.fast_fields().i64(names::TS)?, acc: (0, i64::MAX, i64::MIN) })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<MinMax>) -> tantivy::Result<MinMax> {
        Ok(fruits.into_iter().fold((0, i64::MAX, i64::MIN), |a, b| (a.0 + b.0, a.1.min(b.1), a.2.max(b.2))))
    }
}

impl SegmentCollector for MinMaxSegment {
    type Fruit = MinMax;

    fn collect(&mut self, doc: DocId, _score: Score) {
        let ts = self.ts.first(doc).unwrap_or(0);
        self.acc = (self.acc.0 + 1, self.acc.1.min(ts), self.acc.2.max(ts));
    }

    fn harvest(self) -> MinMax {
        self.acc
    }
}

/// Counts matches per fixed-width `_ts` bucket starting at `origin_ns`.
pub struct HistogramCollector {
    /// Start of the first bucket.
    pub origin_ns: i64,
    /// Bucket width.
    pub interval_ns: i64,
    /// Number of buckets.
    pub buckets: usize,
}

/// Per-segment part of [`HistogramCollector`].
pub struct HistogramSegment {
    ts: Column<i64>,
    origin_ns: i64,
    interval_ns: i64,
    counts: Vec<u64>,
}

impl Collector for HistogramCollector {
    type Fruit = Vec<u64>;
    type Child = HistogramSegment;

    fn for_segment(&self, _ord: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<HistogramSegment> {
        Ok(HistogramSegment {
            ts: reader.fast_fields().i64(names::TS)?,
            origin_ns: self.origin_ns,
            interval_ns: self.interval_ns,
            counts: vec![0; self.buckets],
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Vec<u64>>) -> tantivy::Result<Vec<u64>> {
        let mut out = vec![0; self.buckets];
        for f in fruits {
            for (o, c) in out.iter_mut().zip(f) {
                *o += c;
            }
        }
        Ok(out)
    }
}

impl SegmentCollector for HistogramSegment {
    type Fruit = Vec<u64>;

    fn collect(&mut self, doc: DocId, _score: Score) {
        let ts = self.ts.first(doc).unwrap_or(0);
        let i = (ts - self.origin_ns).div_euclid(self.interval_ns);
        // The time filter keeps every match inside the buckets; clamp defensively.
        let i = i.clamp(0, self.counts.len() as i64 - 1) as usize;
        self.counts[i] += 1;
    }

    fn harvest(self) -> Vec<u64> {
        self.counts
    }
}

/// A value of a terms bucket.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TermKey {
    /// A string (keyword or raw string value).
    Str(String),
    /// A number (f64 bits, compared by value when sorting output).
    Num(u64),
    /// A boolean.
    Bool(bool),
}

/// Counts events per distinct value of a fast column (an event with several
/// values counts once per distinct value). The reference implementation:
/// each counted ordinal's text is looked up on its own, per segment; the
/// store counts with [`crate::terms::TermCountsCollector`].
pub struct TermsCollector {
    /// Column name (`@host`, `level`, `attrs.http.method`).
    pub column: String,
}

enum TermCol {
    Str(StrColumn, Vec<u64>),
    Num(Column<f64>, HashMap<u64, u64>),
    Bool(Column<bool>, [u64; 2]),
}

/// Per-segment part of [`TermsCollector`].
pub struct TermsSegment {
    cols: Vec<TermCol>,
    scratch: Vec<u64>,
}

impl Collector for TermsCollector {
    type Fruit = HashMap<TermKey, u64>;
    type Child = TermsSegment;

    fn for_segment(&self, _ord: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<TermsSegment> {
        let mut cols = Vec::new();
        for h in reader.fast_fields().dynamic_column_handles(&self.column)? {
            match h.open()? {
                DynamicColumn::Str(c) => {
                    let n = c.num_terms();
                    cols.push(TermCol::Str(c, vec![0; n]));
                }
                DynamicColumn::Bool(c) => cols.push(TermCol::Bool(c, [0; 2])),
                other => {
                    if let Some(DynamicColumn::F64(c)) = other.coerce_numerical(NumericalType::F64) {
                        cols.push(TermCol::Num(c, HashMap::new()));
                    }
                }
            }
        }
        Ok(TermsSegment { cols, scratch: Vec::new() })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<HashMap<TermKey, u64>>) -> tantivy::Result<HashMap<TermKey, u64>> {
        let mut out: HashMap<TermKey, u64> = HashMap::new();
        for f in fruits {
            for (k, c) in f {
                *out.entry(k).or_default() += c;
            }
        }
        Ok(out)
    }
}

impl SegmentCollector for TermsSegment {
    type Fruit = HashMap<TermKey, u64>;

    fn collect(&mut self, doc: DocId, _score: Score) {
        for col in &mut self.cols {
            match col {
                TermCol::Str(c, counts) => {
                    self.scratch.clear();
                    self.scratch.extend(c.term_ords(doc));
                    if self.scratch.len() > 1 {
                        self.scratch.sort_unstable();
                        self.scratch.dedup();
                    }
                    for &o in &self.scratch {
                        if let Some(slot) = counts.get_mut(o as usize) {
                            *slot += 1;
                        }
                    }
                }
                TermCol::Num(c, counts) => {
                    self.scratch.clear();
                    self.scratch.extend(c.values_for_doc(doc).map(f64::to_bits));
                    if self.scratch.len() > 1 {
                        self.scratch.sort_unstable();
                        self.scratch.dedup();
                    }
                    for &v in &self.scratch {
                        *counts.entry(v).or_default() += 1;
                    }
                }
                TermCol::Bool(c, counts) => {
                    let mut seen = [false; 2];
                    for v in c.values_for_doc(doc) {
                        seen[v as usize] = true;
                    }
                    for (i, s) in seen.iter().enumerate() {
                        if *s {
                            counts[i] += 1;
                        }
                    }
                }
            }
        }
    }

    fn harvest(self) -> HashMap<TermKey, u64> {
        let mut out = HashMap::new();
        for col in self.cols {
            match col {
                TermCol::Str(c, counts) => {
                    let mut s = String::new();
                    for (ord, n) in counts.into_iter().enumerate() {
                        if n > 0 && c.ord_to_str(ord as u64, &mut s).unwrap_or(false) {
                            *out.entry(TermKey::Str(s.clone())).or_default() += n;
                        }
                    }
                }
                TermCol::Num(_, counts) => {
                    for (bits, n) in counts {
                        *out.entry(TermKey::Num(bits)).or_default() += n;
                    }
                }
                TermCol::Bool(_, counts) => {
                    for (i, n) in counts.into_iter().enumerate() {
                        if n > 0 {
                            *out.entry(TermKey::Bool(i == 1)).or_default() += n;
                        }
                    }
                }
            }
        }
        out
    }
}

/// count / min / max / sum of the numeric values of a column.
pub struct StatsCollector {
    /// Column name.
    pub column: String,
}

/// (events with a value, values, min, max, sum).
#[derive(Clone, Copy, Debug, Default)]
pub struct StatsAcc {
    /// Events with at least one numeric value.
    pub events: u64,
    /// Numeric values seen.
    pub values: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sum of values.
    pub sum: f64,
}

impl StatsAcc {
    /// Nothing seen yet.
    pub fn empty() -> Self {
        Self { events: 0, values: 0, min: f64::INFINITY, max: f64::NEG_INFINITY, sum: 0.0 }
    }

    /// Adds another accumulator.
    pub fn merge(&mut self, o: &StatsAcc) {
        self.events += o.events;
        self.values += o.values;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
    }
}

/// Per-segment part of [`StatsCollector`].
pub struct StatsSegment {
    cols: Vec<Column<f64>>,
    acc: StatsAcc,
}

impl Collector for StatsCollector {
    type Fruit = StatsAcc;
    type Child = StatsSegment;

    fn for_segment(&self, _ord: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<StatsSegment> {
        let mut cols = Vec::new();
        for h in reader.fast_fields().dynamic_column_handles(&self.column)? {
            let c = h.open()?;
            if c.is_numerical() {
                if let Some(DynamicColumn::F64(c)) = c.coerce_numerical(NumericalType::F64) {
                    cols.push(c);
                }
            }
        }
        Ok(StatsSegment { cols, acc: StatsAcc::empty() })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<StatsAcc>) -> tantivy::Result<StatsAcc> {
        let mut out = StatsAcc::empty();
        for f in &fruits {
            out.merge(f);
        }
        Ok(out)
    }
}

impl SegmentCollector for StatsSegment {
    type Fruit = StatsAcc;

    fn collect(&mut self, doc: DocId, _score: Score) {
        let mut any = false;
        for c in &self.cols {
            for v in c.values_for_doc(doc) {
                any = true;
                self.acc.values += 1;
                self.acc.sum += v;
                self.acc.min = self.acc.min.min(v);
                self.acc.max = self.acc.max.max(v);
            }
        }
        if any {
            self.acc.events += 1;
        }
    }

    fn harvest(self) -> StatsAcc {
        self.acc
    }
}
