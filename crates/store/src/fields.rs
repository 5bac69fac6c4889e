//! The field list of `GET /api/v1/fields`: a collector that reports every
//! field with a value in at least one document its query matches (the
//! principal's filter and the time range), read from the segments' own
//! column lists — the dynamic `attrs.<path>` columns and the identity
//! keywords — plus `message` (from the `_present` postings) and
//! `@timestamp`.
//!
//! Why: a sample of the newest events (the first implementation took 1,000)
//! lost the fields of every source that was not among them (issue #22).
//! Cost: per matching document, one presence test per column not yet found
//! (a column leaves the list at its first match, so a segment whose fields
//! all show up early costs one pass over its matches).

use std::collections::BTreeSet;

use sluice_query::FieldType;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{ColumnIndex, ColumnType, DynamicColumn};
use tantivy::postings::SegmentPostings;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentOrdinal, SegmentReader, Term, TERMINATED};

use crate::schema::names;

/// Fields (name, type) with a value in at least one matching document; a
/// name appears once per type it has (`status` as text and as number).
pub type FieldsFruit = Vec<(String, FieldType)>;

/// Collects the fields of the matching documents (see the module doc).
pub struct FieldsCollector {
    /// The `_present` field (its term `message` marks a string message).
    pub present: Field,
}

/// A column not yet seen on a matching document.
struct Pending {
    name: String,
    ty: FieldType,
    index: ColumnIndex,
}

/// Per-segment part of [`FieldsCollector`].
pub struct FieldsSegment {
    pending: Vec<Pending>,
    /// Documents with a string message, walked forward with the matches.
    message: Option<SegmentPostings>,
    found: FieldsFruit,
    any: bool,
}

/// The field a fast column shows as, and its type; `None` for internal columns.
fn field_of(column: &str, ty: ColumnType) -> Option<(String, FieldType)> {
    let keyword = [names::GROUP, names::SUBGROUP, names::HOST, names::SOURCE].contains(&column);
    let name = match column.strip_prefix("attrs.") {
        Some(path) => path.to_string(),
        None if keyword => column.to_string(),
        // `_ts`, `_seq`, and `level` (derived; the event's own `level` is in `attrs`).
        None => return None,
    };
    let ty = match ty {
        ColumnType::Str | ColumnType::Bytes | ColumnType::IpAddr if keyword => FieldType::Keyword,
        ColumnType::Str | ColumnType::Bytes | ColumnType::IpAddr => FieldType::Text,
        ColumnType::I64 | ColumnType::U64 | ColumnType::F64 => FieldType::Number,
        ColumnType::Bool => FieldType::Boolean,
        ColumnType::DateTime => FieldType::Date,
    };
    Some((name, ty))
}

fn index_of(c: DynamicColumn) -> ColumnIndex {
    match c {
        DynamicColumn::Bool(c) => c.index,
        DynamicColumn::I64(c) => c.index,
        DynamicColumn::U64(c) => c.index,
        DynamicColumn::F64(c) => c.index,
        DynamicColumn::IpAddr(c) => c.index,
        DynamicColumn::DateTime(c) => c.index,
        DynamicColumn::Bytes(c) => c.ords().index.clone(),
        DynamicColumn::Str(c) => c.ords().index.clone(),
    }
}

impl Collector for FieldsCollector {
    type Fruit = FieldsFruit;
    type Child = FieldsSegment;

    fn for_segment(&self, _ord: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<FieldsSegment> {
        let usage = reader.space_usage()?;
        let columns: BTreeSet<&str> = usage.fast_fields().fields().map(|f| f.field_name()).collect();
        let mut pending = Vec::new();
        for column in columns {
            for handle in reader.fast_fields().dynamic_column_handles(column)? {
                if let Some((name, ty)) = field_of(column, handle.column_type()) {
                    pending.push(Pending { name, ty, index: index_of(handle.open()?) });
                }
            }
        }
        let term = Term::from_field_text(self.present, names::MESSAGE);
        let message = reader.inverted_index(self.present)?.read_postings(&term, IndexRecordOption::Basic)?;
        Ok(FieldsSegment { pending, message, found: Vec::new(), any: false })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<FieldsFruit>) -> tantivy::Result<FieldsFruit> {
        Ok(fruits.into_iter().flatten().collect())
    }
}

impl SegmentCollector for FieldsSegment {
    type Fruit = FieldsFruit;

    fn collect(&mut self, doc: DocId, _score: Score) {
        self.any = true;
        if let Some(p) = &mut self.message {
            // Matches arrive in doc order, so the postings only move forward.
            let at = if p.doc() < doc { p.seek(doc) } else { p.doc() };
            if at == doc {
                self.found.push((names::MESSAGE.to_string(), FieldType::Text));
                self.message = None;
            } else if at == TERMINATED {
                self.message = None;
            }
        }
        if self.pending.is_empty() {
            return;
        }
        let found = &mut self.found;
        self.pending.retain(|c| {
            let has = c.index.has_value(doc);
            if has {
                found.push((c.name.clone(), c.ty));
            }
            !has
        });
    }

    fn harvest(mut self) -> FieldsFruit {
        if self.any {
            self.found.push(("@timestamp".to_string(), FieldType::Date));
        }
        self.found
    }
}
