//! One segment's part of a field sort: its count and its best hits, read
//! either from the query's documents or from the sort column itself (issue
//! #23: a sort by `bytes` over 100 M events read every event's value
//! through the query's documents; a sort by `path` took 3.6 s).
//!
//! **Value-led.** Where the field is one single-valued column in the
//! segment — a number column, or a string column read by its ordinals,
//! which follow the strings' byte order within a segment (ADR 0121) — and
//! the query matches densely (every document, or one row in
//! [`DENSE`] by the scorer's size hint), the column is scanned [`WINDOW`]
//! rows at a time for the values that can still enter the page — every
//! value at first, then only those not worse than the worst hit kept (the
//! bound tightens as the page fills) — with the column's own range filter
//! over its packed values. Only the rows it finds are tested against the
//! query (`seek_danger`: a column predicate reads the row's value) and
//! offered to the page, through the same [`FieldTopSegment::offer`] as the
//! document-led read, so the hits and their order are the same. The
//! windows whose first or last row holds the best values are read first
//! ([`SEEDS`], ADR 0122): a column that rises with arrival (a counter, an
//! id) sorted largest first then fills the page from its runs' ends, and
//! the bound skips the rest. The count
//! comes from [`Plan::count`] (the segment's size when everything matches,
//! else the cache or a count of the query's documents).
//!
//! **Document-led** (everywhere else): every matching document's value is
//! read, a block at a time ([`FieldTopSegment::collect_block`]). Taken for
//! several columns on the path (mixed types), several values per event,
//! numbers beyond ±2⁵³ (not exact in `f64`), a cursor on a value of
//! another type than the column's or after every string of the column, a
//! query sparse in the segment (a test per row found would cost more than
//! reading the few matches), and, after the scan, when the segment holds
//! fewer matching events with a value than the page (the events without
//! one then enter it).

use std::ops::RangeInclusive;
use std::sync::Arc;

use sluice_query::BackendError;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Cardinality, Column, StrColumn, TermOrdHit};
use tantivy::fastfield::AliveBitSet;
use tantivy::query::{AllScorer, Scorer};
use tantivy::{DocId, DocSet, SeekDangerResult, COLLECT_BLOCK_BUFFER_LEN};

use super::{str_bound, FieldTopCollector, FieldTopFruit, FieldTopSegment, Memo, SortCol, SortValue};
use crate::plan::{internal, Plan, Seg};

/// Rows scanned per call of the column's range filter: the bound is
/// tightened between windows.
const WINDOW: DocId = 1 << 12;

/// A query's documents are dense enough for the value-led read when at
/// least one row in this many matches (by the scorer's size hint).
const DENSE: u64 = 64;

/// The largest magnitude whose integers `f64` holds exactly.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// The segment's count and best hits (see the module docs).
pub(crate) fn top(plan: &Plan, s: &Seg, collector: &FieldTopCollector) -> Result<FieldTopFruit, BackendError> {
    let reader = plan.reader(s);
    let mut seg = collector.for_segment(s.ord, reader).map_err(internal)?;
    let mut docs = plan.scorer(s)?;
    let max_doc = reader.max_doc();
    let alive = reader.alive_bitset();
    let dense = docs.as_ref().is_none_or(|d| u64::from(d.size_hint()) * DENSE >= u64::from(max_doc));
    if let (true, Some(led)) = (dense, value_led(&seg)) {
        let rows = Rows { docs: docs.as_deref_mut(), alive, max_doc };
        let fresh = &mut || plan.scorer(s);
        let full = match led {
            Led::Num(col, after) => scan(&mut seg, &col, &mut Numbers { col: &col, after }, rows, fresh)?,
            Led::Str(col, left) => {
                let mut names = Names { col: &col, left, memo: Memo::default() };
                scan(&mut seg, col.ords(), &mut names, rows, fresh)?
            }
        };
        if full {
            seg.count = plan.count(s)?;
            return Ok(seg.harvest());
        }
        // Too few events with a value: read again, document-led.
        seg = collector.for_segment(s.ord, reader).map_err(internal)?;
        docs = plan.scorer(s)?;
    }
    // What tantivy's `collect_segment` does, with the scorer already built
    // (a column predicate scans its first window when it is built).
    let mut d = docs.unwrap_or_else(|| Box::new(AllScorer::new(max_doc)));
    let mut buf = [0; COLLECT_BLOCK_BUFFER_LEN];
    loop {
        let n = d.fill_buffer(&mut buf);
        match alive {
            None => seg.collect_block(&buf[..n]),
            Some(a) => {
                let live: Vec<DocId> = buf[..n].iter().copied().filter(|&doc| a.is_alive(doc)).collect();
                seg.collect_block(&live);
            }
        }
        if n < buf.len() {
            break;
        }
    }
    Ok(seg.harvest())
}

/// The column a value-led read scans, and what the cursor leaves of it.
enum Led {
    /// A number column; the cursor's number.
    Num(Column<f64>, Option<f64>),
    /// A string column, scanned by ordinal (the strings' byte order within
    /// the segment); the ordinals the cursor leaves.
    Str(StrColumn, RangeInclusive<u64>),
}

/// The sort column and what the cursor leaves of it when the value-led
/// read can be taken (see the module docs).
fn value_led(seg: &FieldTopSegment) -> Option<Led> {
    if seg.k == 0 {
        return None;
    }
    // A cursor on a value of another type than the column's: read
    // document-led (the column holds all or none of what is left).
    let after = seg.after.as_ref().map(|a| &a.value);
    match seg.cols.as_slice() {
        [SortCol::Num(col)] if col.get_cardinality() != Cardinality::Multivalued => {
            if !(col.min_value().abs() < EXACT && col.max_value().abs() < EXACT) {
                return None;
            }
            let after = match after {
                None => None,
                Some(Some(SortValue::Num(n))) => Some(*n),
                Some(_) => return None,
            };
            Some(Led::Num(col.clone(), after))
        }
        [SortCol::Str(col, _)] if col.ords().get_cardinality() != Cardinality::Multivalued => {
            let last = (col.num_terms() as u64).checked_sub(1)?;
            let left = match after {
                None => 0..=last,
                Some(Some(SortValue::Str(a))) => after_ords(col, a, seg.desc, last)?,
                Some(_) => return None,
            };
            Some(Led::Str(col.clone(), left))
        }
        _ => None,
    }
}

/// The ordinals of the strings not before the cursor's string `a` in the
/// sort (equal ones included: the tie is decided on time). `None` when no
/// string of the column is left (the segment is then read document-led:
/// what is left are its events without a value) or the dictionary cannot
/// be read. `last` is the largest ordinal.
fn after_ords(col: &StrColumn, a: &str, desc: bool, last: u64) -> Option<RangeInclusive<u64>> {
    // The ordinal of `a`, or of the first string after it (beyond the last
    // string: past `last`).
    let (ord, exact) = match col.dictionary().term_ord_or_next(a.as_bytes()).ok()? {
        TermOrdHit::Exact(o) => (o, true),
        TermOrdHit::Next(o) => (o.min(last + 1), false),
    };
    let (lo, hi) = match (desc, exact) {
        (false, _) => (ord, last),
        (true, true) => (0, ord),
        (true, false) => (0, ord.checked_sub(1)?),
    };
    (lo <= hi).then_some(lo..=hi)
}

/// The query's documents a value-led scan tests its rows against.
struct Rows<'a> {
    /// The query's documents (`None`: every document matches).
    docs: Option<&'a mut dyn Scorer>,
    alive: Option<&'a AliveBitSet>,
    max_doc: DocId,
}

/// What a value-led scan reads a column's values as.
trait Keys<T> {
    /// The values that can still enter the page (asked before each
    /// window); `None`: no value can.
    fn range(&mut self, seg: &FieldTopSegment) -> Option<RangeInclusive<T>>;
    /// Called with a window's matching rows and their values before they
    /// are offered.
    fn prepare(&mut self, _seg: &FieldTopSegment, _found: &[(DocId, T)]) {}
    /// A found row's sort value; `None`: the row cannot enter the page.
    fn value(&mut self, seg: &FieldTopSegment, v: T) -> Option<SortValue>;
}

/// Windows read first (see [`seeds`]).
const SEEDS: usize = 4;

/// Offers the segment's matching rows whose value can enter the page (see
/// the module docs). Whether the page is full.
///
/// The [`SEEDS`] windows whose first or last row holds the best values are
/// read first: the best alone, then the others in row order, each of the
/// two against a new scorer of the query from `fresh` (a scorer only moves
/// forward; made only where a window finds rows). Then every other window
/// is read in row order against the first scorer.
///
/// Where values rise with the row (a counter, an offset, an id: events
/// arrive in time order) and the sort wants the largest, read in row order
/// alone every row would be better than the worst kept and enter the page
/// in turn (a sort by `count` descending took 45× its ascending sort over
/// 10 M events). A merged segment holds such runs one after another in no
/// particular order, so the runs' ends are looked for, not the segment's.
fn scan<T>(
    seg: &mut FieldTopSegment,
    col: &Column<T>,
    keys: &mut impl Keys<T>,
    Rows { mut docs, alive, max_doc }: Rows<'_>,
    fresh: &mut dyn FnMut() -> Result<Option<Box<dyn Scorer>>, BackendError>,
) -> Result<bool, BackendError>
where
    T: PartialOrd + Copy + std::fmt::Debug + Send + Sync + 'static,
{
    let mut w = Window { col, alive, rows: Vec::new(), found: Vec::new() };
    let seeds = match keys.range(seg) {
        Some(r) => seeds(col, &r, seg.desc, max_doc),
        None => return Ok(seg.heap.len() >= seg.k),
    };
    // The best seed alone, then the others in row order: each group
    // against a scorer of its own.
    let (best, rest) = seeds.split_at(seeds.len().min(1));
    let mut rest = rest.to_vec();
    rest.sort_unstable();
    for group in [best, &rest] {
        let (mut own, mut bound): (Option<Option<Box<dyn Scorer>>>, DocId) = (None, 0);
        for &i in group {
            if !w.find(seg, keys, i, max_doc) {
                return Ok(seg.heap.len() >= seg.k);
            }
            if w.rows.is_empty() {
                continue;
            }
            let d = match &mut own {
                Some(d) => d,
                None => {
                    let d = if docs.is_some() { fresh()? } else { None };
                    // A new scorer stands on the query's first document.
                    bound = d.as_deref().map_or(0, |d| d.doc());
                    own.insert(d)
                }
            };
            w.offer(seg, keys, d.as_deref_mut(), &mut bound);
        }
    }
    // No document below `bound` matches but those already found: at first
    // the query's first document (a new scorer stands on it, and
    // `seek_danger` is only asked about later ones), then what
    // `seek_danger` answers (rows come in strictly increasing order, as it
    // asks).
    let mut bound: DocId = docs.as_deref().map_or(0, |d| d.doc());
    for i in 0..max_doc.div_ceil(WINDOW) {
        if seeds.contains(&i) {
            continue;
        }
        if !w.find(seg, keys, i, max_doc) {
            break;
        }
        w.offer(seg, keys, docs.as_deref_mut(), &mut bound);
    }
    Ok(seg.heap.len() >= seg.k)
}

/// The [`SEEDS`] windows (by index) whose first or last row holds the
/// best values inside `r` (the cursor's range), best first. One window
/// has no other to be read before.
fn seeds<T>(col: &Column<T>, r: &RangeInclusive<T>, desc: bool, max_doc: DocId) -> Vec<DocId>
where
    T: PartialOrd + Copy + std::fmt::Debug + Send + Sync + 'static,
{
    let windows = max_doc.div_ceil(WINDOW);
    if windows < 2 {
        return Vec::new();
    }
    let better = |a: &T, b: &T| if desc { a > b } else { a < b };
    let mut ends: Vec<(T, DocId)> = (0..windows)
        .filter_map(|i| {
            let (first, last) = (i * WINDOW, max_doc.min((i + 1) * WINDOW) - 1);
            let v = [col.first(first), col.first(last)]
                .into_iter()
                .flatten()
                .filter(|v| r.contains(v))
                .reduce(|a, b| if better(&b, &a) { b } else { a })?;
            Some((v, i))
        })
        .collect();
    let order = |a: &(T, DocId), b: &(T, DocId)| {
        if better(&a.0, &b.0) {
            std::cmp::Ordering::Less
        } else if better(&b.0, &a.0) {
            std::cmp::Ordering::Greater
        } else {
            a.1.cmp(&b.1)
        }
    };
    if ends.len() > SEEDS {
        ends.select_nth_unstable_by(SEEDS - 1, order);
        ends.truncate(SEEDS);
    }
    ends.sort_unstable_by(order);
    ends.into_iter().map(|(_, i)| i).collect()
}

/// One window of a value-led scan, with buffers kept across windows.
struct Window<'a, T> {
    col: &'a Column<T>,
    alive: Option<&'a AliveBitSet>,
    rows: Vec<DocId>,
    found: Vec<(DocId, T)>,
}

impl<T> Window<'_, T>
where
    T: PartialOrd + Copy + std::fmt::Debug + Send + Sync + 'static,
{
    /// The rows of window `i` whose value can still enter the page, into
    /// `rows`. `false` when no value can enter any more.
    fn find(&mut self, seg: &FieldTopSegment, keys: &mut impl Keys<T>, i: DocId, max_doc: DocId) -> bool {
        let start = i * WINDOW;
        let end = max_doc.min(start.saturating_add(WINDOW));
        self.rows.clear();
        let Some(r) = keys.range(seg) else { return false };
        self.col.get_docids_for_value_range(r, start..end, &mut self.rows);
        true
    }

    /// Offers the rows [`Window::find`] found that match `docs` (`None`:
    /// every document matches; tested from `bound` on).
    fn offer(
        &mut self,
        seg: &mut FieldTopSegment,
        keys: &mut impl Keys<T>,
        mut docs: Option<&mut dyn Scorer>,
        bound: &mut DocId,
    ) {
        self.found.clear();
        for &doc in &self.rows {
            if let Some(d) = docs.as_deref_mut() {
                if doc < *bound {
                    continue;
                }
                // The row's own test rather than a walk of the query's
                // documents up to it.
                if let SeekDangerResult::SeekLowerBound(b) = d.seek_danger(doc) {
                    *bound = b;
                    continue;
                }
            }
            if self.alive.is_some_and(|a| !a.is_alive(doc)) {
                continue;
            }
            if let Some(v) = self.col.first(doc) {
                self.found.push((doc, v));
            }
        }
        keys.prepare(seg, &self.found);
        for &(doc, v) in &self.found {
            if let Some(v) = keys.value(seg, v) {
                seg.offer(doc, Some(v));
            }
        }
    }
}

/// A number column's values.
struct Numbers<'a> {
    col: &'a Column<f64>,
    /// The cursor's number.
    after: Option<f64>,
}

impl Keys<f64> for Numbers<'_> {
    /// Not worse than the worst hit kept once the page is full, and not
    /// before the cursor. (A fractional bound on an integer column is
    /// truncated towards zero by the column's range filter, which keeps
    /// every integer it bounds.)
    fn range(&mut self, seg: &FieldTopSegment) -> Option<RangeInclusive<f64>> {
        let (col, after) = (self.col, self.after);
        let worst = if seg.heap.len() >= seg.k {
            match seg.heap.peek().map(|w| &w.key.value) {
                Some(Some(SortValue::Num(n))) => Some(*n),
                _ => return None,
            }
        } else {
            None
        };
        // Descending: from the worst kept up to the cursor; ascending: from
        // the cursor up to the worst kept.
        let (lo, hi) = if seg.desc { (worst, after) } else { (after, worst) };
        let lo = lo.map_or(col.min_value(), |v| v.max(col.min_value()));
        let hi = hi.map_or(col.max_value(), |v| v.min(col.max_value()));
        (lo <= hi).then_some(lo..=hi)
    }

    fn value(&mut self, _seg: &FieldTopSegment, v: f64) -> Option<SortValue> {
        Some(SortValue::Num(v))
    }
}

/// The strings of a value-led scan by ordinal: each found ordinal's text
/// read once, a window's at a time, and only for an ordinal that can still
/// enter the page.
struct Names<'a> {
    col: &'a StrColumn,
    /// The ordinals the cursor leaves.
    left: RangeInclusive<u64>,
    /// The found ordinals' strings.
    memo: Memo,
}

impl Names<'_> {
    /// What the cursor leaves, cut at the worst hit kept once the page is
    /// full. Every hit kept came from this scan, so the worst's string has
    /// an ordinal here. `None`: no ordinal can enter.
    fn bounds(&self, seg: &FieldTopSegment) -> Option<(u64, u64)> {
        let (mut lo, mut hi) = (*self.left.start(), *self.left.end());
        if seg.heap.len() >= seg.k {
            let ord = str_bound(&seg.heap, seg.k, self.col, &self.memo)?;
            if seg.desc {
                lo = lo.max(ord);
            } else {
                hi = hi.min(ord);
            }
        }
        (lo <= hi).then_some((lo, hi))
    }
}

impl Keys<u64> for Names<'_> {
    fn range(&mut self, seg: &FieldTopSegment) -> Option<RangeInclusive<u64>> {
        self.bounds(seg).map(|(lo, hi)| lo..=hi)
    }

    /// Reads the strings of the window's ordinals still in
    /// [`Names::bounds`] that were not read before, in one sorted walk of
    /// the dictionary.
    fn prepare(&mut self, seg: &FieldTopSegment, found: &[(DocId, u64)]) {
        let Some((lo, hi)) = self.bounds(seg) else { return };
        let mut ords: Vec<u64> = found.iter().map(|&(_, o)| o).filter(|&o| (lo..=hi).contains(&o)).collect();
        self.memo.read(self.col, &mut ords);
    }

    /// The ordinal's string when the ordinal is still in [`Names::bounds`]
    /// (the page may have filled since the window began: a string of a
    /// later row is then refused on its ordinal).
    fn value(&mut self, seg: &FieldTopSegment, ord: u64) -> Option<SortValue> {
        let (lo, hi) = self.bounds(seg)?;
        if ord < lo || ord > hi {
            return None;
        }
        self.memo.get(ord).map(|s| SortValue::Str(Arc::clone(s)))
    }
}
