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
//! clauses propose are tested: tantivy's `seek_danger`).

use std::fmt;
use std::sync::Arc;

use sluice_query::matcher::{TextMatcher, WildcardMatcher};
use tantivy::columnar::{BytesColumn, Column, DynamicColumn, NumericalType};
use tantivy::query::doc_predicate_query::{ConstOrVariableSegmentPredicate, DocPredicate, SegmentDocPredicate};
use tantivy::query::AllScorer;
use tantivy::{DocId, SegmentReader};

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

    /// Whether the segment holds no event inside the window.
    fn outside_window(&self, reader: &SegmentReader) -> tantivy::Result<bool> {
        let Some((from, to)) = self.window else { return Ok(false) };
        let ts = reader.fast_fields().i64(names::TS)?;
        Ok(reader.max_doc() == 0 || ts.max_value() < from || ts.min_value() >= to)
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
        if self.outside_window(reader)? {
            return Ok(ConstOrVariableSegmentPredicate::Const(false));
        }
        let mut cols = Vec::new();
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
                        cols.push(SegmentColumn::Num(c, n));
                    }
                }
            }
        }
        if cols.is_empty() {
            return Ok(ConstOrVariableSegmentPredicate::Const(false));
        }
        Ok(ConstOrVariableSegmentPredicate::Variable {
            predicate: SegmentColumns { cols },
            necessary_condition: Box::new(AllScorer::new(reader.max_doc())),
        })
    }
}
