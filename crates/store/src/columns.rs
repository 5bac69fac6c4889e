//! Term, phrase and wildcard queries on dynamic fields, answered from the
//! fast columns of `attrs` instead of an inverted index.
//!
//! Why: indexing every string of every dynamic field (tokens with positions)
//! was the largest part of the indexing cost, while the fast columns, which
//! terms aggregations need anyway, already hold every value. A query on
//! `attrs.<path>` is evaluated per segment on the column dictionaries: each
//! *distinct* string of the path is tested once with the very matcher the
//! live tail uses (`sluice_query::matcher::{TextMatcher, WildcardMatcher}`),
//! so the store and the tail give a query the same meaning by construction;
//! documents then match when one of their values has a matching ordinal.
//! Numbers and booleans compare against the numeric and boolean columns.
//!
//! Cost: the dictionary scan is proportional to the number of distinct
//! values of the path in a segment, the document test to the number of
//! candidate documents (inside a conjunction, only the documents the other
//! clauses propose are tested: tantivy's `seek_danger`). The candidates are
//! narrowed first: a path held by one column alone is scanned by the column
//! itself (a pass over its packed values, not a test per event) for the
//! number (ADR 0117) or for the span from the smallest to the largest
//! matching ordinal of its dictionary (ADR 0118), and in a segment that the
//! request's time window cuts, only the rows the window can hold are scanned
//! (from `_ts`'s block bounds). The scan finds exactly the events with a
//! value in its range, so it is the answer where that range is the match
//! set (a number; contiguous matching ordinals): the scan itself is then
//! tantivy's scorer (`columns/exact.rs`, ADR 0120). Otherwise each event
//! it finds is still tested.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use sluice_query::matcher::{TextMatcher, WildcardMatcher};
use tantivy::columnar::{BytesColumn, Cardinality, Column, DynamicColumn, NumericalType};
use tantivy::query::doc_predicate_query::{ConstOrVariableSegmentPredicate, DocPredicate, SegmentDocPredicate};
use tantivy::query::AllScorer;

use tantivy::index::SegmentId;
use tantivy::{DocId, DocSet, SeekDangerResult, SegmentReader, TERMINATED};
use tantivy_common::TinySet;

use crate::schema::names;

mod exact;

pub use exact::ColumnQuery;

/// What a dynamic-field query tests.
#[derive(Debug)]
pub enum Test {
    /// A term or phrase: strings by analysed tokens, numbers and booleans by value.
    Text(TextMatcher),
    /// A wildcard against each analysed token of strings.
    Wildcard(WildcardMatcher),
}

impl Test {
    fn str_matches(&self, s: &str) -> bool {
        match self {
            Test::Text(m) => m.matches_str(s),
            Test::Wildcard(w) => w.matches_a_token(s),
        }
    }

    fn may_match_str(&self) -> bool {
        match self {
            Test::Text(m) => !m.matches_no_str(),
            Test::Wildcard(_) => true,
        }
    }
}

/// A query on the fast columns of one dynamic path (`attrs.http.status`).
#[derive(Clone)]
pub struct ColumnPredicate {
    column: String,
    test: Arc<Test>,
    window: Option<(i64, i64)>,
    /// Segments prepared by [`ColumnQuery`] and handed on to tantivy's
    /// predicate docset (taken by [`DocPredicate::doc_predicate`]).
    prepared: Arc<Mutex<HashMap<SegmentId, Prepared>>>,
}

/// A segment's part of a [`ColumnPredicate`], prepared once.
enum Prepared {
    /// Every document matches, or none.
    Const(bool),
    /// The scan of a lone column finds exactly the matches (a number; a
    /// string whose matching ordinals are contiguous): it is the answer.
    Exact(ScanDocSet),
    /// The documents to test, and the test.
    Variable(SegmentColumns, Box<dyn DocSet>),
}

impl ColumnPredicate {
    /// A predicate on the column named `column` (`attrs.<path>`), inside a
    /// query restricted to the time range `window` (`[from, to)` in ns):
    /// segments whose `_ts` values all lie outside it are not scanned.
    pub fn new(column: String, test: Test, window: Option<(i64, i64)>) -> Self {
        Self { column, test: Arc::new(test), window, prepared: Arc::default() }
    }

    /// Where the segment lies against the window.
    fn against_window(&self, reader: &SegmentReader) -> tantivy::Result<Against> {
        let Some((from, to)) = self.window else { return Ok(Against::Inside) };
        if reader.max_doc() == 0 {
            return Ok(Against::Outside);
        }
        let ts = reader.fast_fields().i64(names::TS)?;
        Ok(if ts.max_value() < from || ts.min_value() >= to {
            Against::Outside
        } else if from <= ts.min_value() && ts.max_value() < to {
            Against::Inside
        } else {
            Against::Across(from, to, ts)
        })
    }
}

impl fmt::Debug for ColumnPredicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ColumnPredicate")
            .field("column", &self.column)
            .field("test", &self.test)
            .field("window", &self.window)
            .finish()
    }
}

/// A segment's `_ts` against a [`ColumnPredicate`]'s window.
enum Against {
    /// No event inside the window.
    Outside,
    /// Every event inside it (or no window).
    Inside,
    /// Some events inside `[from, to)`; the segment's `_ts`.
    Across(i64, i64, Column<i64>),
}

/// A column whose documents holding a value are found by the column's own
/// range scan (a pass over the packed values) instead of a test per
/// document.
#[derive(Clone)]
enum Scan {
    /// A number column and the value.
    Num(Column<f64>, f64),
    /// A string column's ordinals, the smallest and largest matching one,
    /// and whether every ordinal between them matches: the documents found
    /// hold an ordinal in that range, a superset of the matches when the
    /// matching ordinals are not contiguous (the predicate tests each).
    Ords(Column<u64>, std::ops::RangeInclusive<u64>, bool),
}

impl Scan {
    /// The documents of `docs` holding a value in the scan's range,
    /// ascending, in `out` (cleared first); the column gives a document
    /// holding several such values once. For a number `n`, `v == n` also
    /// holds for `-0.0 == 0.0`, which are neighbours in the column's order.
    fn docs(&self, docs: std::ops::Range<DocId>, out: &mut Vec<DocId>) {
        out.clear();
        match self {
            Scan::Num(col, n) => {
                let values = if *n == 0.0 { -0.0..=0.0 } else { *n..=*n };
                col.get_docids_for_value_range(values, docs, out);
            }
            Scan::Ords(col, ords, _) => col.get_docids_for_value_range(ords.clone(), docs, out),
        }
    }

    /// The scan's range is the match set: nothing is left for the
    /// predicate to test.
    fn exact(&self) -> bool {
        match self {
            Scan::Num(..) => true,
            Scan::Ords(_, _, contiguous) => *contiguous,
        }
    }

    /// Whether `doc` may match, for a candidate another clause proposes:
    /// whether it holds a value in the range (what [`Scan::docs`] finds)
    /// when the scan is exact; otherwise taken as it is, since the
    /// predicate reads its ordinals anyway (one read, not two).
    fn holds(&self, doc: DocId) -> bool {
        match self {
            Scan::Num(col, n) => col.values_for_doc(doc).any(|v| v == *n),
            Scan::Ords(col, ords, true) => col.values_for_doc(doc).any(|o| ords.contains(&o)),
            Scan::Ords(_, _, false) => true,
        }
    }
}

/// Documents scanned at a time by [`ScanDocSet`].
const SCAN_WINDOW: DocId = 1 << 14;

/// The documents of a range holding a [`Scan`]'s value, scanned a window of
/// [`SCAN_WINDOW`] documents at a time where the set is driven (`advance`,
/// `seek`). A conjunction led by another clause, or an exclusion, asks with
/// `seek_danger`, which reads the candidate's own value (scanning the window
/// of each candidate would read every value as soon as they are a few per
/// window, and guessing from their gaps when to scan cost more than it
/// saved, ADR 0118). Either way an exact scan's set holds exactly the
/// documents with a value in its range. Its size is estimated from the first window,
/// so that a conjunction lets the rarer clause lead.
struct ScanDocSet {
    scan: Scan,
    /// The documents to scan: `start..end`.
    start: DocId,
    end: DocId,
    /// Start of the first window not scanned yet.
    next: DocId,
    /// The matches of the last window scanned; `pos` the current one.
    found: Vec<DocId>,
    pos: usize,
    size_hint: u32,
}

impl ScanDocSet {
    fn new(scan: Scan, docs: std::ops::Range<DocId>) -> Self {
        let mut s =
            Self { scan, start: docs.start, end: docs.end, next: docs.start, found: Vec::new(), pos: 0, size_hint: 0 };
        s.scan_from(docs.start);
        // The first window's share of matches, over the whole range.
        let scanned = u64::from(s.next.saturating_sub(docs.start)).max(1);
        let share = (s.found.len() as u64).max(1);
        s.size_hint =
            u32::try_from(share * u64::from(docs.end.saturating_sub(docs.start)) / scanned).unwrap_or(u32::MAX).max(1);
        s
    }

    /// Scans windows from `start` until one holds a match (or the end);
    /// returns the current document.
    fn scan_from(&mut self, mut start: DocId) -> DocId {
        loop {
            self.found.clear();
            self.pos = 0;
            if start >= self.end {
                self.next = self.end;
                return TERMINATED;
            }
            let stop = self.end.min(start.saturating_add(SCAN_WINDOW));
            self.scan.docs(start..stop, &mut self.found);
            self.next = stop;
            if let Some(&d) = self.found.first() {
                return d;
            }
            start = stop;
        }
    }
}

impl DocSet for ScanDocSet {
    #[inline]
    fn advance(&mut self) -> DocId {
        self.pos += 1;
        match self.found.get(self.pos) {
            Some(&d) => d,
            None => self.scan_from(self.next),
        }
    }

    fn seek(&mut self, target: DocId) -> DocId {
        let doc = self.doc();
        // (No current document after a refused `seek_danger`: scanning goes
        // on from `next`; when the set is done, `next` is `end`.)
        if doc >= target && doc != TERMINATED {
            return doc;
        }
        // Inside the window scanned last, or from the window of `target`.
        if self.found.last().is_some_and(|&l| l >= target) {
            self.pos = gallop(&self.found, self.pos, target);
            return self.found[self.pos];
        }
        self.scan_from(target.max(self.next))
    }

    /// Asked by a conjunction led by another clause or by an exclusion:
    /// the candidate's own value is read.
    fn seek_danger(&mut self, target: DocId) -> SeekDangerResult {
        // Outside the documents scanned (a lower bound from another clause
        // may lie past the segment's last document).
        if target >= self.end {
            return SeekDangerResult::SeekLowerBound(TERMINATED);
        }
        if target < self.start {
            return SeekDangerResult::SeekLowerBound(self.start);
        }
        if self.doc() == target {
            return SeekDangerResult::Found;
        }
        // Scanning goes on after it (what was scanned past it is dropped).
        self.found.clear();
        self.pos = 0;
        self.next = target + 1;
        if self.scan.holds(target) {
            self.found.push(target);
            SeekDangerResult::Found
        } else {
            SeekDangerResult::SeekLowerBound(if self.next >= self.end { TERMINATED } else { self.next })
        }
    }

    #[inline]
    fn doc(&self) -> DocId {
        self.found.get(self.pos).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        self.size_hint
    }

    /// The set's size, window by window, without walking it.
    fn count_including_deleted(&mut self) -> u32 {
        if self.doc() == TERMINATED {
            return 0;
        }
        let mut n = self.found.len() - self.pos;
        let mut start = self.next;
        while start < self.end {
            let stop = self.end.min(start.saturating_add(SCAN_WINDOW));
            self.scan.docs(start..stop, &mut self.found);
            n += self.found.len();
            start = stop;
        }
        self.found.clear();
        self.pos = 0;
        self.next = self.end;
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The block's bits straight from the documents found (a dense
    /// conjunction counts 1,024 documents at a time this way).
    fn fill_bitset_block(&mut self, min_doc: DocId, mask: &mut [TinySet; 16]) -> DocId {
        let horizon = min_doc.saturating_add(BLOCK_WINDOW);
        let mut doc = self.seek(min_doc);
        loop {
            if doc >= horizon {
                return doc;
            }
            let end = self.pos + self.found[self.pos..].partition_point(|&d| d < horizon);
            for &d in &self.found[self.pos..end] {
                let delta = d - min_doc;
                mask[(delta / 64) as usize].insert_mut(delta % 64);
            }
            self.pos = end;
            doc = match self.found.get(self.pos) {
                Some(&d) => d,
                None => self.scan_from(self.next),
            };
        }
    }
}

/// Documents per [`DocSet::fill_bitset_block`] (tantivy's `BLOCK_WINDOW`:
/// 16 bit sets of 64).
const BLOCK_WINDOW: DocId = 16 * 64;

/// The first position at or after `from` in the ascending `docs` whose
/// document is `target` or later (`docs.len()` when none): by doubling
/// steps, then halving, so that a near `target` (an exclusion or a
/// conjunction walking the segment in order) costs a few comparisons.
fn gallop(docs: &[DocId], from: usize, target: DocId) -> usize {
    let (mut lo, mut step) = (from, 1);
    while lo + step < docs.len() && docs[lo + step] < target {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(docs.len());
    lo + docs[lo..hi].partition_point(|&d| d < target)
}

/// Documents `first..last` holding every event of the segment with `_ts` in
/// `[from, to)` (and others): from the bounds of `_ts`'s blocks of 512 rows
/// (ADR 0116), the whole segment when the codec has none.
fn window_rows(ts: &Column<i64>, from: i64, to: i64, max_doc: DocId) -> std::ops::Range<DocId> {
    if ts.get_cardinality() != Cardinality::Full {
        return 0..max_doc;
    }
    let (mut first, mut last) = (None, 0);
    let mut start = 0;
    while start < max_doc {
        let end = max_doc.min(start + 512);
        let Some(b) = ts.values.row_range_bounds(start..end) else { return 0..max_doc };
        if *b.end() >= from && *b.start() < to {
            first.get_or_insert(start);
            last = end;
        }
        start = end;
    }
    first.map_or(0..0, |f| f..last)
}

/// One column of a segment the predicate reads.
enum SegmentColumn {
    /// String ordinals and the set of matching ordinals (a bit per ordinal).
    Str(BytesColumn, Vec<u64>),
    /// Numbers (coerced to f64) equal to the value.
    Num(Column<f64>, f64),
    /// Booleans equal to the value.
    Bool(Column<bool>, bool),
}

/// The per-segment part of [`ColumnPredicate`].
pub struct SegmentColumns {
    cols: Vec<SegmentColumn>,
    /// The necessary condition holds exactly the matches (a lone number
    /// column, or a string column whose matching ordinals are contiguous):
    /// nothing is left to test.
    exact: bool,
}

fn bit(bits: &[u64], ord: u64) -> bool {
    bits.get((ord / 64) as usize).is_some_and(|w| w & (1 << (ord % 64)) != 0)
}

impl SegmentDocPredicate for SegmentColumns {
    // Called per candidate; left to the code generation's choice, it was once
    // not inlined (12 % of a 24 h string term: journal, 2026-11-28 evening).
    #[inline]
    fn eval(&mut self, doc: DocId) -> bool {
        self.exact
            || self.cols.iter().any(|c| match c {
                SegmentColumn::Str(col, bits) => col.term_ords(doc).any(|o| bit(bits, o)),
                SegmentColumn::Num(col, n) => col.values_for_doc(doc).any(|v| v == *n),
                SegmentColumn::Bool(col, b) => col.values_for_doc(doc).any(|v| v == *b),
            })
    }

    fn cost(&self) -> u64 {
        10
    }
}

/// The ordinals of a column's dictionary whose string passes a test.
struct Ords {
    /// A bit per ordinal.
    bits: Vec<u64>,
    /// The smallest and largest matching ordinal.
    span: std::ops::RangeInclusive<u64>,
    /// Every ordinal of the span matches.
    contiguous: bool,
}

/// The ordinals of `col`'s dictionary whose string passes `test`; `None`
/// when there is none.
fn matching_ords(col: &BytesColumn, test: &Test) -> tantivy::Result<Option<Ords>> {
    let n = col.num_terms();
    let mut bits = vec![0u64; n.div_ceil(64)];
    let mut span: Option<(u64, u64)> = None;
    let mut count = 0u64;
    let mut stream = col.dictionary().stream()?;
    while stream.advance() {
        let Ok(s) = std::str::from_utf8(stream.key()) else { continue };
        if test.str_matches(s) {
            let ord = stream.term_ord();
            if let Some(w) = bits.get_mut((ord / 64) as usize) {
                *w |= 1 << (ord % 64);
                // The stream is in ordinal order.
                span = Some((span.map_or(ord, |(first, _)| first), ord));
                count += 1;
            }
        }
    }
    Ok(span.map(|(first, last)| Ords { bits, span: first..=last, contiguous: count == last - first + 1 }))
}

impl DocPredicate for ColumnPredicate {
    type SegmentDocPredicate = SegmentColumns;

    fn doc_predicate(
        &self,
        reader: &SegmentReader,
    ) -> tantivy::Result<ConstOrVariableSegmentPredicate<SegmentColumns>> {
        let taken = self.prepared.lock().ok().and_then(|mut m| m.remove(&reader.segment_id()));
        let prepared = match taken {
            Some(p) => p,
            None => self.prepare(reader)?,
        };
        Ok(match prepared {
            Prepared::Const(b) => ConstOrVariableSegmentPredicate::Const(b),
            Prepared::Exact(scan) => ConstOrVariableSegmentPredicate::Variable {
                predicate: SegmentColumns { cols: Vec::new(), exact: true },
                necessary_condition: Box::new(scan),
            },
            Prepared::Variable(predicate, necessary_condition) => {
                ConstOrVariableSegmentPredicate::Variable { predicate, necessary_condition }
            }
        })
    }
}

impl ColumnPredicate {
    /// The predicate's part in the segment of `reader`.
    fn prepare(&self, reader: &SegmentReader) -> tantivy::Result<Prepared> {
        let against = self.against_window(reader)?;
        if let Against::Outside = against {
            return Ok(Prepared::Const(false));
        }
        let mut cols = Vec::new();
        let mut scans = Vec::new();
        for handle in reader.fast_fields().dynamic_column_handles(&self.column)? {
            match handle.open()? {
                DynamicColumn::Str(c) => {
                    if !self.test.may_match_str() {
                        continue;
                    }
                    let bytes: BytesColumn = c.into();
                    if let Some(ords) = matching_ords(&bytes, &self.test)? {
                        scans.push(Scan::Ords(bytes.ords().clone(), ords.span, ords.contiguous));
                        cols.push(SegmentColumn::Str(bytes, ords.bits));
                    }
                }
                DynamicColumn::Bool(c) => {
                    if let Test::Text(m) = &*self.test {
                        if let Some(b) = m.boolean() {
                            cols.push(SegmentColumn::Bool(c, b));
                        }
                    }
                }
                other => {
                    let Test::Text(m) = &*self.test else { continue };
                    let Some(n) = m.number() else { continue };
                    if !other.is_numerical() {
                        continue;
                    }
                    if let Some(DynamicColumn::F64(c)) = other.coerce_numerical(NumericalType::F64) {
                        scans.push(Scan::Num(c.clone(), n));
                        cols.push(SegmentColumn::Num(c, n));
                    }
                }
            }
        }
        if cols.is_empty() {
            return Ok(Prepared::Const(false));
        }
        // A lone number or string column is scanned for the value or the
        // matching ordinals (inside the window's rows) rather than tested
        // event by event; what the scan finds is tested only when the span
        // of ordinals holds some that do not match.
        let max_doc = reader.max_doc();
        if let ([_], [scan]) = (&cols[..], &scans[..]) {
            let rows = match &against {
                Against::Across(from, to, ts) => window_rows(ts, *from, *to, max_doc),
                _ => 0..max_doc,
            };
            let set = ScanDocSet::new(scan.clone(), rows);
            if scan.exact() {
                return Ok(Prepared::Exact(set));
            }
            return Ok(Prepared::Variable(SegmentColumns { cols, exact: false }, Box::new(set)));
        }
        // Otherwise every event is a candidate: the query's own time clause,
        // in the same conjunction, keeps a cut segment's outside ones away.
        Ok(Prepared::Variable(SegmentColumns { cols, exact: false }, Box::new(AllScorer::new(max_doc))))
    }
}

#[cfg(test)]
mod tests {
    use tantivy::schema::{Schema, FAST};
    use tantivy::{doc, Index, IndexWriter, TantivyDocument};

    use super::*;

    /// [`ScanDocSet`] walks and seeks to exactly the brute-force documents,
    /// across several scan windows, one with no match at all, partial
    /// ranges, and `0` matching `-0.0`.
    #[test]
    fn scan_doc_set_walks_and_seeks_like_brute_force_across_windows() {
        let mut b = Schema::builder();
        let x = b.add_f64_field("x", FAST);
        let index = Index::create_in_ram(b.build());
        let mut w: IndexWriter<TantivyDocument> = index.writer_with_num_threads(1, 50_000_000).unwrap();
        let n = 3 * SCAN_WINDOW + 123;
        let vals: Vec<f64> = (0..n)
            .map(|i| match i % 7 {
                // No 5 in the second window.
                0 if (SCAN_WINDOW..2 * SCAN_WINDOW).contains(&i) => 1.0,
                0 => 5.0,
                1 => -0.0,
                2 => 0.0,
                _ => f64::from(i % 11),
            })
            .collect();
        for v in &vals {
            w.add_document(doc!(x => *v)).unwrap();
        }
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        assert_eq!(searcher.segment_readers().len(), 1);
        let col = searcher.segment_reader(0).fast_fields().f64("x").unwrap();
        for value in [5.0, 0.0, 9.0, 42.0] {
            for docs in [0..n, 100..2 * SCAN_WINDOW + 50, SCAN_WINDOW..2 * SCAN_WINDOW, n - 3..n] {
                let want: Vec<DocId> = docs.clone().filter(|&d| vals[d as usize] == value).collect();
                let mut s = ScanDocSet::new(Scan::Num(col.clone(), value), docs.clone());
                assert!(s.size_hint() > 0);
                let mut got = Vec::new();
                while s.doc() != TERMINATED {
                    got.push(s.doc());
                    s.advance();
                }
                assert_eq!(got, want, "walk {value} in {docs:?}");
                // Counted without a walk: fresh, and after a first step.
                let mut s = ScanDocSet::new(Scan::Num(col.clone(), value), docs.clone());
                assert_eq!(s.count_including_deleted() as usize, want.len(), "count {value} in {docs:?}");
                assert_eq!(s.doc(), TERMINATED);
                let mut s = ScanDocSet::new(Scan::Num(col.clone(), value), docs.clone());
                s.advance();
                assert_eq!(s.count_including_deleted() as usize, want.len().saturating_sub(1), "count after a step");
                // Bit blocks of 1,024 documents, as a dense conjunction asks
                // for them: from the first match, each block from where the
                // last one said the next match is, and blocks that start
                // between matches.
                for stride in [None, Some(700)] {
                    let mut s = ScanDocSet::new(Scan::Num(col.clone(), value), docs.clone());
                    let mut got = Vec::new();
                    let mut base = s.doc();
                    while base != TERMINATED {
                        let mut mask = [TinySet::empty(); 16];
                        let next = s.fill_bitset_block(base, &mut mask);
                        for (i, t) in mask.iter().enumerate() {
                            got.extend(t.into_iter().map(|b| base + i as DocId * 64 + b));
                        }
                        let horizon = base + BLOCK_WINDOW;
                        let first_after = want.iter().copied().find(|&d| d >= horizon).unwrap_or(TERMINATED);
                        assert_eq!(next, first_after, "next after the block at {base}, {value} in {docs:?}");
                        // With a stride, the next block may start before
                        // `next` (between matches), never before `base`.
                        base = match stride {
                            Some(k) if next != TERMINATED => (base + k).min(next),
                            _ => next,
                        };
                    }
                    got.sort_unstable();
                    got.dedup();
                    assert_eq!(got, want, "bit blocks ({stride:?}) of {value} in {docs:?}");
                }
                let mut s = ScanDocSet::new(Scan::Num(col.clone(), value), docs.clone());
                for target in (docs.start..docs.end + 5).step_by(4999) {
                    let first = want.iter().copied().find(|&d| d >= target).unwrap_or(TERMINATED);
                    assert_eq!(s.seek(target), first, "seek {target} for {value} in {docs:?}");
                    assert_eq!(s.doc(), first);
                }
                // A conjunction led by another clause, or an exclusion:
                // candidates sparse (every 3,001st), dense (every 3rd, every
                // one) and both, answered exactly (a match is found, nothing
                // else is) and by the contract of `seek_danger`: what is not
                // found comes with a lower bound past the target and not
                // past the next match; walking on from a found one reaches
                // the next match.
                for (name, targets) in [
                    ("sparse", (docs.start..docs.end).step_by(3001).collect::<Vec<_>>()),
                    ("every 3rd", (docs.start..docs.end).step_by(3).collect()),
                    ("every one", (docs.start..docs.end).collect()),
                    (
                        "sparse then dense",
                        (docs.start..docs.end)
                            .filter(|d| (d - docs.start) % 9000 == 0 || (d - docs.start) % 20_000 < 300)
                            .collect(),
                    ),
                ] {
                    let mut s = ScanDocSet::new(Scan::Num(col.clone(), value), docs.clone());
                    let (mut found, mut walked) = (0, 0);
                    for &target in &targets {
                        let next_match = want.iter().copied().find(|&d| d >= target).unwrap_or(TERMINATED);
                        match s.seek_danger(target) {
                            SeekDangerResult::Found => {
                                found += 1;
                                assert_eq!(s.doc(), target, "{name}: found {target}");
                                // The set is exact: only matches are found.
                                assert!(want.binary_search(&target).is_ok(), "{name}: {target} is no {value}");
                                // Walk on from the first and every 50th one
                                // found (the conjunction's own `advance`),
                                // then keep asking.
                                if found % 50 == 1 {
                                    let after = want.iter().copied().find(|&d| d > target).unwrap_or(TERMINATED);
                                    assert_eq!(s.advance(), after, "{name}: after {target} for {value} in {docs:?}");
                                    walked += 1;
                                }
                            }
                            SeekDangerResult::SeekLowerBound(b) => {
                                assert_ne!(next_match, target, "{name}: match {target} of {value} refused");
                                assert!(
                                    b > target && b <= next_match,
                                    "{name}: bound {b} for {target}, next {next_match}"
                                );
                                // A `seek` after a refusal finds the next match.
                                if name == "sparse" {
                                    assert_eq!(s.seek(target + 1), next_match, "{name}: seek after {target}");
                                }
                            }
                        }
                    }
                    assert_eq!(found, want.iter().filter(|d| targets.contains(d)).count(), "{name}");
                    assert!(walked > 0 || found == 0, "{name}");
                }
                // A lower bound past the documents scanned.
                let mut s = ScanDocSet::new(Scan::Num(col.clone(), value), docs.clone());
                assert_eq!(s.seek_danger(docs.end), SeekDangerResult::SeekLowerBound(TERMINATED));
            }
        }
    }
}
