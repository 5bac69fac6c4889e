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
//! narrowed first (ADR 0117): a path held by one number column alone is
//! scanned for the value by the column itself (a pass over its packed
//! values, not a test per event), and in a segment that the request's time
//! window cuts, only the rows the window can hold are scanned (from `_ts`'s
//! block bounds) or, for other columns, only the events inside it tested.

use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use sluice_query::matcher::{TextMatcher, WildcardMatcher};
use tantivy::columnar::{BytesColumn, Cardinality, Column, DynamicColumn, NumericalType};
use tantivy::query::doc_predicate_query::{ConstOrVariableSegmentPredicate, DocPredicate, SegmentDocPredicate};
use tantivy::query::{AllScorer, BitSetDocSet, EnableScoring, Query, RangeQuery};
use tantivy::BitSet;
use tantivy::{DocId, DocSet, SegmentReader, Term};

use crate::schema::names;

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
}

impl ColumnPredicate {
    /// A predicate on the column named `column` (`attrs.<path>`), inside a
    /// query restricted to the time range `window` (`[from, to)` in ns):
    /// segments whose `_ts` values all lie outside it are not scanned.
    pub fn new(column: String, test: Test, window: Option<(i64, i64)>) -> Self {
        Self { column, test: Arc::new(test), window }
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

/// A number column whose documents holding one value are found by the
/// column's own range scan (a pass over the packed values) instead of a
/// test per document.
struct Scan(Column<f64>, f64);

impl Scan {
    /// The documents of `docs` holding the value, as a bit set. `v == n`
    /// also holds for `-0.0 == 0.0`, which are neighbours in the column's
    /// order; a superset would be allowed (the predicate still tests each).
    fn docs(&self, docs: std::ops::Range<DocId>, max_doc: DocId) -> BitSet {
        let Scan(col, n) = self;
        let values = if *n == 0.0 { -0.0..=0.0 } else { *n..=*n };
        let mut set = BitSet::with_max_value(max_doc);
        let mut found = Vec::new();
        let mut start = docs.start;
        while start < docs.end {
            let end = docs.end.min(start.saturating_add(1 << 16));
            found.clear();
            col.get_docids_for_value_range(values.clone(), start..end, &mut found);
            for &d in &found {
                set.insert(d);
            }
            start = end;
        }
        set
    }
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

/// The documents of `reader` with `_ts` in `[from, to)` (tantivy's range
/// filter on the fast column, a block of 512 at a time where the block's
/// bounds decide it: ADR 0116).
fn window_docs(reader: &SegmentReader, from: i64, to: i64) -> tantivy::Result<Box<dyn DocSet>> {
    let field = reader.schema().get_field(names::TS)?;
    let q = RangeQuery::new(
        Bound::Included(Term::from_field_i64(field, from)),
        Bound::Excluded(Term::from_field_i64(field, to)),
    );
    let scorer = q.weight(EnableScoring::disabled_from_schema(reader.schema()))?.scorer(reader, 1.0)?;
    Ok(scorer)
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
}

fn bit(bits: &[u64], ord: u64) -> bool {
    bits.get((ord / 64) as usize).is_some_and(|w| w & (1 << (ord % 64)) != 0)
}

impl SegmentDocPredicate for SegmentColumns {
    fn eval(&mut self, doc: DocId) -> bool {
        self.cols.iter().any(|c| match c {
            SegmentColumn::Str(col, bits) => col.term_ords(doc).any(|o| bit(bits, o)),
            SegmentColumn::Num(col, n) => col.values_for_doc(doc).any(|v| v == *n),
            SegmentColumn::Bool(col, b) => col.values_for_doc(doc).any(|v| v == *b),
        })
    }

    fn cost(&self) -> u64 {
        10
    }
}

/// The ordinals of `col`'s dictionary whose string passes `test`, as a bit
/// set; `None` when there is none.
fn matching_ords(col: &BytesColumn, test: &Test) -> tantivy::Result<Option<Vec<u64>>> {
    let n = col.num_terms();
    let mut bits = vec![0u64; n.div_ceil(64)];
    let mut any = false;
    let mut stream = col.dictionary().stream()?;
    while stream.advance() {
        let Ok(s) = std::str::from_utf8(stream.key()) else { continue };
        if test.str_matches(s) {
            let ord = stream.term_ord();
            if let Some(w) = bits.get_mut((ord / 64) as usize) {
                *w |= 1 << (ord % 64);
                any = true;
            }
        }
    }
    Ok(any.then_some(bits))
}

impl DocPredicate for ColumnPredicate {
    type SegmentDocPredicate = SegmentColumns;

    fn doc_predicate(
        &self,
        reader: &SegmentReader,
    ) -> tantivy::Result<ConstOrVariableSegmentPredicate<SegmentColumns>> {
        let against = self.against_window(reader)?;
        if let Against::Outside = against {
            return Ok(ConstOrVariableSegmentPredicate::Const(false));
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
                    if let Some(bits) = matching_ords(&bytes, &self.test)? {
                        cols.push(SegmentColumn::Str(bytes, bits));
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
                        scans.push(Scan(c.clone(), n));
                        cols.push(SegmentColumn::Num(c, n));
                    }
                }
            }
        }
        if cols.is_empty() {
            return Ok(ConstOrVariableSegmentPredicate::Const(false));
        }
        // Across a bound of the window, only the events inside it are
        // tested: tantivy may fill a block of a conjunction clause by clause
        // (`fill_bitset_block`), which would test every event of the block.
        // A lone integer column is scanned for the value (inside the
        // window's rows) rather than tested event by event.
        let max_doc = reader.max_doc();
        if let ([SegmentColumn::Num(..)], [scan]) = (&cols[..], &scans[..]) {
            let rows = match &against {
                Against::Across(from, to, ts) => window_rows(ts, *from, *to, max_doc),
                _ => 0..max_doc,
            };
            let necessary_condition = Box::new(BitSetDocSet::from(scan.docs(rows, max_doc)));
            return Ok(ConstOrVariableSegmentPredicate::Variable {
                predicate: SegmentColumns { cols },
                necessary_condition,
            });
        }
        let necessary_condition = match against {
            Against::Across(from, to, _) => window_docs(reader, from, to)?,
            _ => Box::new(AllScorer::new(max_doc)),
        };
        Ok(ConstOrVariableSegmentPredicate::Variable { predicate: SegmentColumns { cols }, necessary_condition })
    }
}
