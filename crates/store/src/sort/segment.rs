//! One segment's part of a field sort: its count and its best hits, read
//! either from the query's documents or from the sort column itself (issue
//! #23: a sort by `bytes` over 100 M events read every event's value
//! through the query's documents).
//!
//! **Value-led.** Where the field is one single-valued number column in the
//! segment and the query matches densely (every document, or one row in
//! [`DENSE`] by the scorer's size hint), the column is scanned [`WINDOW`]
//! rows at a time for the values that can still enter the page — every
//! value at first, then only those not worse than the worst hit kept (the
//! bound tightens as the page fills) — with the column's own range filter
//! over its packed values. Only the rows it finds are tested against the
//! query (`seek_danger`: a column predicate reads the row's value) and
//! offered to the page, through the same [`FieldTopSegment::offer`] as the
//! document-led read, so the hits and their order are the same. The count
//! comes from [`Plan::count`] (the segment's size when everything matches,
//! else the cache or a count of the query's documents).
//!
//! **Document-led** (everywhere else): every matching document's value is
//! read, a block at a time ([`FieldTopSegment::collect_block`]). Taken for
//! several columns on the path (mixed types), several values per event,
//! numbers beyond ±2⁵³ (not exact in `f64`), a cursor on a value that is
//! not a number, a query sparse in the segment (a test per row found would
//! cost more than reading the few matches), and, after the scan, when the
//! segment holds fewer matching events with a value than the page (the
//! events without one then enter it).

use std::ops::RangeInclusive;

use sluice_query::BackendError;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Cardinality, Column};
use tantivy::fastfield::AliveBitSet;
use tantivy::query::{AllScorer, Scorer};
use tantivy::{DocId, DocSet, SeekDangerResult, COLLECT_BLOCK_BUFFER_LEN};

use super::{FieldTopCollector, FieldTopFruit, FieldTopSegment, SortCol, SortValue};
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
    if let (true, Some((col, after))) = (dense, value_led(&seg)) {
        if scan(&mut seg, &col, after, docs.as_deref_mut(), alive, max_doc) {
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

/// The sort column and the cursor's number when the value-led read can be
/// taken (see the module docs).
fn value_led(seg: &FieldTopSegment) -> Option<(Column<f64>, Option<f64>)> {
    if seg.k == 0 {
        return None;
    }
    let col = match seg.cols.as_slice() {
        [SortCol::Num(c)] if c.get_cardinality() != Cardinality::Multivalued => c,
        _ => return None,
    };
    if !(col.min_value().abs() < EXACT && col.max_value().abs() < EXACT) {
        return None;
    }
    // A cursor on a number bounds the values still to come; on anything
    // else (a string, a boolean, no value) the column holds none of them.
    let after = match seg.after.as_ref().map(|a| &a.value) {
        None => None,
        Some(Some(SortValue::Num(n))) => Some(*n),
        Some(_) => return None,
    };
    Some((col.clone(), after))
}

/// Offers the segment's matching rows whose value can enter the page (see
/// the module docs); `docs` are the query's documents (`None`: every
/// document matches). Whether the page is full.
fn scan(
    seg: &mut FieldTopSegment,
    col: &Column<f64>,
    after: Option<f64>,
    mut docs: Option<&mut dyn Scorer>,
    alive: Option<&AliveBitSet>,
    max_doc: DocId,
) -> bool {
    let mut rows = Vec::new();
    // No document below `bound` matches but those already found: at first
    // the query's first document (a new scorer stands on it, and
    // `seek_danger` is only asked about later ones), then what
    // `seek_danger` answers (rows come in strictly increasing order, as it
    // asks).
    let mut bound: DocId = docs.as_deref().map_or(0, |d| d.doc());
    let mut start = 0;
    while start < max_doc {
        let end = max_doc.min(start.saturating_add(WINDOW));
        let Some(range) = candidates(seg, col, after) else { break };
        rows.clear();
        col.get_docids_for_value_range(range, start..end, &mut rows);
        for &doc in &rows {
            if let Some(d) = docs.as_deref_mut() {
                if doc < bound {
                    continue;
                }
                // The row's own test rather than a walk of the query's
                // documents up to it.
                if let SeekDangerResult::SeekLowerBound(b) = d.seek_danger(doc) {
                    bound = b;
                    continue;
                }
            }
            if alive.is_some_and(|a| !a.is_alive(doc)) {
                continue;
            }
            seg.offer(doc, col.first(doc).map(SortValue::Num));
        }
        start = end;
    }
    seg.heap.len() >= seg.k
}

/// The values that can still enter the page: not worse than the worst hit
/// kept once the page is full, and not before the cursor. `None`: no value
/// can. (A fractional bound on an integer column is truncated towards zero
/// by the column's range filter, which keeps every integer it bounds.)
fn candidates(seg: &FieldTopSegment, col: &Column<f64>, after: Option<f64>) -> Option<RangeInclusive<f64>> {
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
