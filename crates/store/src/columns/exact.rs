//! A dynamic-field query whose column scan is the answer, handed to tantivy
//! as that scan itself.
//!
//! tantivy's predicate query wraps the documents to test
//! (`DocPredicateDocSet`) and calls the predicate on each, even when the
//! predicate is known to hold for all of them. Where a lone column's scan
//! is exact (a number; a string whose matching ordinals are contiguous),
//! [`ColumnQuery`] gives tantivy the scan ([`ScanDocSet`]) as the scorer:
//! counting it adds up the windows it finds, and a dense conjunction fills
//! its 1,024-document bit blocks straight from them. Elsewhere the segment
//! prepared here is handed on to tantivy's own predicate docset (through
//! [`ColumnPredicate`]'s `prepared` map), so nothing is prepared twice.

use std::fmt;

use tantivy::query::doc_predicate_query::DocPredicateBoxable;
use tantivy::query::{EmptyScorer, Scorer};
use tantivy::{DocId, DocSet, Score, SeekDangerResult, SegmentReader, TERMINATED};

use super::{ColumnPredicate, Prepared, ScanDocSet};

/// A [`ColumnPredicate`] as tantivy's predicate query runs it (see the
/// module docs).
pub struct ColumnQuery(pub ColumnPredicate);

impl fmt::Debug for ColumnQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl ColumnQuery {
    /// The segment's exact scan; anything else is kept for tantivy's
    /// predicate docset, which takes it in `doc_predicate`.
    fn exact(&self, reader: &SegmentReader) -> tantivy::Result<Option<ScanDocSet>> {
        match self.0.prepare(reader)? {
            Prepared::Exact(scan) => Ok(Some(scan)),
            other => {
                if let Ok(mut m) = self.0.prepared.lock() {
                    m.insert(reader.segment_id(), other);
                }
                Ok(None)
            }
        }
    }
}

impl DocPredicateBoxable for ColumnQuery {
    fn scorer(&self, reader: &SegmentReader, boost: f32) -> tantivy::Result<Box<dyn Scorer>> {
        match self.exact(reader)? {
            Some(scan) if scan.doc() == TERMINATED => Ok(Box::new(EmptyScorer)),
            Some(scan) => Ok(Box::new(scan)),
            None => DocPredicateBoxable::scorer(&self.0, reader, boost),
        }
    }

    fn scorer_danger(
        &self,
        reader: &SegmentReader,
        target: DocId,
        boost: f32,
    ) -> tantivy::Result<(SeekDangerResult, Box<dyn Scorer>)> {
        match self.exact(reader)? {
            Some(mut scan) => Ok((scan.seek_danger(target), Box::new(scan))),
            None => DocPredicateBoxable::scorer_danger(&self.0, reader, target, boost),
        }
    }
}

/// The scan's documents all score alike (the store never scores).
impl Scorer for ScanDocSet {
    fn score(&mut self) -> Score {
        1.0
    }
}
