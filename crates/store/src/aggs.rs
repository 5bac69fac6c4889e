//! One pass per segment for everything an aggregation request still needs
//! from it: the count, the `_ts` extent, histograms, terms and stats (the
//! reference path ran one pass over all segments per aggregation, plus one
//! to count). `_ts` is read once per block of matching documents for all
//! the histograms and the extent — or not at all for a run of consecutive
//! rows whose bounds, known from the column's blocks without decoding them
//! (`row_range_bounds`, vendored tantivy-columnar, ADR 0116), fall in one
//! bucket: time-ordered events fill a block of 512 rows within seconds.
//!
//! Histograms are counted per segment by *absolute* bucket index
//! (`_ts.div_euclid(interval)`), so a segment's histogram does not depend on
//! the request's range and can be cached and reused by a request with
//! another range (a refreshing "last 24 hours"); the request places them
//! into its own buckets.

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Cardinality, Column, ColumnType};
use tantivy::{u64_to_i64, DocId, Score, SegmentOrdinal, SegmentReader};

use crate::cache::{SegmentHistogram, SegmentHits, Value, What};
use crate::collect::{MinMax, StatsAcc, StatsCollector, StatsSegment};
use crate::schema::names;
use crate::terms::{in_chunks, TermCounts, TermCountsCollector, TermCountsSegment};

/// Computes the [`What`]s listed, over `_ts` in `[lo, hi]` (the request's
/// range; histogram arrays cover the part of it a segment spans).
pub struct Fused {
    /// What to compute, in the order of the result.
    pub needs: Vec<What>,
    /// Smallest `_ts` a match can have.
    pub lo: i64,
    /// Largest `_ts` a match can have.
    pub hi: i64,
    /// The segment's `_ts` column when the caller has it opened (a plan's
    /// segment, [`crate::time_columns`]); else opened here.
    pub ts: Option<Column<i64>>,
}

enum Part {
    Count,
    MinMax(i64, i64),
    Histogram { interval: i64, first: i64, counts: Vec<u64> },
    Terms(TermCountsSegment),
    Stats(StatsSegment),
}

/// Per-segment part of [`Fused`].
pub struct FusedSegment {
    count: u64,
    ts: Option<Column<i64>>,
    vals: Vec<Option<i64>>,
    flat: Vec<i64>,
    parts: Vec<Part>,
}

impl Fused {
    /// The values over every document of the segment of `reader`, which
    /// the caller knows all match: see [`FusedSegment::collect_all`].
    pub fn collect_all(&self, ord: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<Vec<Value>> {
        let mut seg = self.for_segment(ord, reader)?;
        seg.collect_all(reader)?;
        Ok(seg.harvest())
    }
}

impl Collector for Fused {
    type Fruit = Vec<Value>;
    type Child = FusedSegment;

    fn for_segment(&self, ord: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<FusedSegment> {
        let ts = match &self.ts {
            Some(ts) => ts.clone(),
            None => reader.fast_fields().i64(names::TS)?,
        };
        let (lo, hi) = (self.lo.max(ts.min_value()), self.hi.min(ts.max_value()).max(self.lo));
        let mut needs_ts = false;
        let mut parts = Vec::with_capacity(self.needs.len());
        for w in &self.needs {
            parts.push(match w {
                What::Count => Part::Count,
                What::MinMax => {
                    needs_ts = true;
                    Part::MinMax(i64::MAX, i64::MIN)
                }
                What::Histogram(iv) => {
                    needs_ts = true;
                    let first = lo.div_euclid(*iv);
                    let n = (hi.div_euclid(*iv) - first + 1).max(1) as usize;
                    Part::Histogram { interval: *iv, first, counts: vec![0; n] }
                }
                What::Terms(c) => Part::Terms(TermCountsCollector { column: c.clone() }.for_segment(ord, reader)?),
                What::Stats(c) => Part::Stats(StatsCollector { column: c.clone() }.for_segment(ord, reader)?),
                What::Top { .. } => {
                    return Err(tantivy::TantivyError::InternalError("hits are not an aggregation".into()))
                }
            });
        }
        Ok(FusedSegment { count: 0, ts: needs_ts.then_some(ts), vals: Vec::new(), flat: Vec::new(), parts })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, mut fruits: Vec<Vec<Value>>) -> tantivy::Result<Vec<Value>> {
        // Used per segment only (`Plan::collect`); a merge is never asked for.
        Ok(fruits.pop().unwrap_or_default())
    }
}

/// Rows of `_ts` looked at together in [`FusedSegment::collect_all`]: one
/// block of tantivy's block-wise linear codec (512 rows), whose bounds it
/// knows without decoding them.
const RUN: u32 = 512;

/// Adds `n` matches whose `_ts` all lie in `[lo, hi]` to the extent and
/// histogram parts without their values, when that is exact: every
/// histogram has `[lo, hi]` inside one of its buckets, and the extent
/// already covers `[lo, hi]`. Returns false, changing nothing, otherwise
/// (the caller then decodes the values).
fn add_bounded(parts: &mut [Part], lo: i64, hi: i64, n: u64) -> bool {
    // The bucket (index into `counts`) holding all of `[lo, hi]`, if one does.
    let bucket = |interval: i64, first: i64, len: usize| {
        let b = lo.div_euclid(interval);
        let i = b - first;
        (b == hi.div_euclid(interval) && 0 <= i && i < len as i64).then_some(i as usize)
    };
    let exact = parts.iter().all(|part| match part {
        Part::MinMax(l, h) => *l <= lo && hi <= *h,
        Part::Histogram { interval, first, counts } => bucket(*interval, *first, counts.len()).is_some(),
        Part::Count | Part::Terms(_) | Part::Stats(_) => true,
    });
    if exact {
        for part in parts {
            if let Part::Histogram { interval, first, counts } = part {
                if let Some(i) = bucket(*interval, *first, counts.len()) {
                    counts[i] += n;
                }
            }
        }
    }
    exact
}

/// Adds the `_ts` of a block of matches to the extent and histogram parts.
fn add_ts(parts: &mut [Part], ts: &[i64]) {
    for part in parts {
        match part {
            Part::MinMax(lo, hi) => {
                for &t in ts {
                    *lo = (*lo).min(t);
                    *hi = (*hi).max(t);
                }
            }
            Part::Histogram { interval, first, counts } => {
                let last = counts.len() as i64 - 1;
                // The bucket of the previous `_ts` as [start, end) and the
                // matches counted into it since: events are mostly in time
                // order, so most need no division and no store.
                let (mut start, mut end, mut i, mut run) = (1i64, 0i64, 0usize, 0u64);
                for &t in ts {
                    if start <= t && t < end {
                        run += 1;
                        continue;
                    }
                    counts[i] += run;
                    let b = t.div_euclid(*interval);
                    // Matches lie inside the segment's and the request's
                    // bounds; clamp defensively as the reference does.
                    i = (b - *first).clamp(0, last) as usize;
                    run = 1;
                    // Kept only when exact: not clamped, no overflow.
                    (start, end) = match (b - *first == i as i64).then(|| b.checked_mul(*interval)).flatten() {
                        Some(s) => (s, s.saturating_add(*interval)),
                        None => (1, 0),
                    };
                }
                counts[i] += run;
            }
            Part::Count | Part::Terms(_) | Part::Stats(_) => {}
        }
    }
}

impl FusedSegment {
    /// The parts that do not read `_ts` (terms and stats) over `docs`.
    fn collect_others(&mut self, docs: &[DocId]) {
        for part in &mut self.parts {
            match part {
                Part::Terms(t) => t.collect_block(docs),
                Part::Stats(s) => s.collect_block(docs),
                Part::Count | Part::MinMax(..) | Part::Histogram { .. } => {}
            }
        }
    }

    /// Computes everything over every document of the segment of `reader`
    /// (`0..max_doc`, none deleted: the caller knows they all match — a
    /// query of `*` by a principal who reads everything, over a segment
    /// wholly inside the range). `_ts` is read `RUN` rows at a time from
    /// its column's stored (`u64`) values (the `i64` view decodes one row
    /// per dynamic call): a run whose bounds fall in one bucket is counted
    /// whole (`add_bounded`), the others decoded. Terms come straight from their ordinal values
    /// ([`TermCountsSegment::collect_all`]): no query, no document-to-row
    /// lookups. The result is the one [`SegmentCollector::collect_block`]
    /// gives over the same documents.
    pub fn collect_all(&mut self, reader: &SegmentReader) -> tantivy::Result<()> {
        let max_doc = reader.max_doc();
        let raw_ts = match &self.ts {
            Some(_) => match reader.fast_fields().u64_lenient_for_type(Some(&[ColumnType::I64]), names::TS)? {
                Some((c, _)) if c.get_cardinality() == Cardinality::Full => Some(c),
                // Not written by this store (every event has one `_ts`): the general path.
                _ => {
                    in_chunks(max_doc, |docs| self.collect_block(docs));
                    return Ok(());
                }
            },
            None => None,
        };
        self.count += u64::from(max_doc);
        if let Some(ts) = raw_ts {
            let mut raw = vec![0u64; RUN as usize];
            let mut buf = vec![0i64; RUN as usize];
            let mut start = 0;
            while start < max_doc {
                let end = max_doc.min(start + RUN);
                let len = (end - start) as usize;
                // A run whose `_ts` bounds (from the column's blocks, without
                // decoding) fall in one bucket is counted whole.
                let whole = ts.values.row_range_bounds(start..end).is_some_and(|b| {
                    add_bounded(&mut self.parts, u64_to_i64(*b.start()), u64_to_i64(*b.end()), len as u64)
                });
                if !whole {
                    ts.values.get_range(u64::from(start), &mut raw[..len]);
                    for (t, &r) in buf.iter_mut().zip(&raw[..len]) {
                        *t = u64_to_i64(r);
                    }
                    add_ts(&mut self.parts, &buf[..len]);
                }
                start = end;
            }
        }
        for part in &mut self.parts {
            match part {
                Part::Terms(t) => t.collect_all(max_doc),
                Part::Stats(s) => in_chunks(max_doc, |docs| s.collect_block(docs)),
                Part::Count | Part::MinMax(..) | Part::Histogram { .. } => {}
            }
        }
        Ok(())
    }
}

impl SegmentCollector for FusedSegment {
    type Fruit = Vec<Value>;

    fn collect(&mut self, doc: DocId, _score: Score) {
        self.collect_block(&[doc]);
    }

    fn collect_block(&mut self, docs: &[DocId]) {
        self.count += docs.len() as u64;
        if let Some(ts) = &self.ts {
            // Consecutive documents of a column with one value each are a
            // range of rows: counted whole when their bounds allow.
            if let (Some(&a), Some(&b)) = (docs.first(), docs.last()) {
                if (b - a) as usize + 1 == docs.len()
                    && ts.get_cardinality() == Cardinality::Full
                    && ts
                        .values
                        .row_range_bounds(a..b + 1)
                        .is_some_and(|r| add_bounded(&mut self.parts, *r.start(), *r.end(), docs.len() as u64))
                {
                    self.collect_others(docs);
                    return;
                }
            }
            self.vals.clear();
            self.vals.resize(docs.len(), None);
            ts.first_vals(docs, &mut self.vals);
            self.flat.clear();
            self.flat.extend(self.vals.iter().map(|t| t.unwrap_or(0)));
            add_ts(&mut self.parts, &self.flat);
        }
        self.collect_others(docs);
    }

    fn harvest(self) -> Vec<Value> {
        let count = self.count;
        self.parts
            .into_iter()
            .map(|p| match p {
                Part::Count => Value::Count(count),
                Part::MinMax(lo, hi) => Value::MinMax((count, lo, hi)),
                Part::Histogram { first, counts, .. } => {
                    Value::Histogram(std::sync::Arc::new(SegmentHistogram { first, counts }))
                }
                Part::Terms(t) => Value::Terms(std::sync::Arc::new(t.harvest())),
                Part::Stats(s) => Value::Stats(s.harvest()),
            })
            .collect()
    }
}

/// The result of `what` over the union of the segments `values` come from
/// (all results of `what`); the empty result when there are none.
pub fn combine(what: &What, values: impl IntoIterator<Item = Value>) -> Value {
    let mut count = 0u64;
    let mut mm: MinMax = (0, i64::MAX, i64::MIN);
    let mut hists: Vec<std::sync::Arc<SegmentHistogram>> = Vec::new();
    let mut terms: Vec<std::sync::Arc<TermCounts>> = Vec::new();
    let mut stats = StatsAcc::empty();
    let mut top: Option<SegmentHits> = None;
    for v in values {
        match v {
            Value::Count(n) => count += n,
            Value::MinMax((c, lo, hi)) => mm = (mm.0 + c, mm.1.min(lo), mm.2.max(hi)),
            Value::Histogram(h) => hists.push(h),
            Value::Terms(t) => terms.push(t),
            Value::Stats(s) => stats.merge(&s),
            Value::Top(t) => top = Some(t),
        }
    }
    match what {
        What::Count => Value::Count(count),
        What::MinMax => Value::MinMax(mm),
        What::Histogram(_) => {
            if hists.len() == 1 {
                return Value::Histogram(hists.swap_remove(0));
            }
            let (Some(first), Some(end)) = (
                hists.iter().filter(|h| !h.counts.is_empty()).map(|h| h.first).min(),
                hists.iter().map(|h| h.first + h.counts.len() as i64).max(),
            ) else {
                return Value::Histogram(Default::default());
            };
            let mut counts = vec![0u64; (end - first) as usize];
            for h in &hists {
                for (j, c) in h.counts.iter().enumerate() {
                    counts[(h.first - first) as usize + j] += c;
                }
            }
            Value::Histogram(std::sync::Arc::new(SegmentHistogram { first, counts }))
        }
        What::Terms(_) => {
            if terms.len() == 1 {
                return Value::Terms(terms.swap_remove(0));
            }
            Value::Terms(std::sync::Arc::new(TermCounts::merge(terms.iter().map(|t| &**t))))
        }
        What::Stats(_) => Value::Stats(stats),
        What::Top { .. } => Value::Top(top.unwrap_or_default()),
    }
}
