//! The `_ts` and `_seq` columns of each segment of a partition, opened once
//! and kept while the segment lives.
//!
//! Tantivy opens a block-wise linear column by reading every block's line
//! into a `Vec` (≈ 7,000 blocks for a segment of 3.5 M events), and a
//! request opened `_ts` for every segment of every partition it reads (for
//! the segment's bounds) and again in each segment's collector. At 100 M
//! events that was most of a request that reads little else (ADR 0117).
//! Segments never change, so a column opened once is valid until the
//! segment is merged away; [`TimeColumns::retain`] drops those.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use tantivy::columnar::Column;
use tantivy::index::SegmentId;
use tantivy::SegmentReader;

use crate::schema::names;

/// A segment's time and sequence columns.
#[derive(Clone)]
pub struct SegmentTime {
    /// `_ts`, nanoseconds.
    pub ts: Column<i64>,
    /// `_seq`.
    pub seq: Column<u64>,
}

impl SegmentTime {
    /// Opens both columns of `reader`'s segment.
    pub fn open(reader: &SegmentReader) -> tantivy::Result<Self> {
        Ok(Self { ts: reader.fast_fields().i64(names::TS)?, seq: reader.fast_fields().u64(names::SEQ)? })
    }
}

/// The opened columns of a partition's segments, by segment.
#[derive(Default)]
pub struct TimeColumns {
    open: Mutex<HashMap<SegmentId, SegmentTime>>,
}

impl TimeColumns {
    /// The columns of `reader`'s segment, opened on first use.
    pub fn get(&self, reader: &SegmentReader) -> tantivy::Result<SegmentTime> {
        let id = reader.segment_id();
        if let Some(t) = self.lock().get(&id) {
            return Ok(t.clone());
        }
        // Opened outside the lock; two requests may both open a new
        // segment's columns once, which is harmless.
        let t = SegmentTime::open(reader)?;
        self.lock().insert(id, t.clone());
        Ok(t)
    }

    /// Forgets the segments not in `live` (merged away since).
    pub fn retain(&self, live: &HashSet<SegmentId>) {
        let mut open = self.lock();
        if open.len() > live.len() || open.keys().any(|id| !live.contains(id)) {
            open.retain(|id, _| live.contains(id));
        }
    }

    /// Segments held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no segment is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SegmentId, SegmentTime>> {
        // A panic while holding the lock leaves a usable map.
        self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use tantivy::indexer::NoMergePolicy;
    use tantivy::{doc, Index, IndexWriter, ReloadPolicy, TantivyDocument};

    use super::*;
    use crate::schema::{analyzer, Fields, TEXT_TOKENIZER};

    /// A segment's columns are opened once and hold its values; after a merge
    /// the merged segment gets its own, and `retain` forgets the merged-away.
    #[test]
    fn columns_follow_segments_through_a_merge() {
        let f = Fields::new();
        let index = Index::create_in_ram(f.schema.clone());
        index.tokenizers().register(TEXT_TOKENIZER, analyzer());
        let mut w: IndexWriter<TantivyDocument> = index.writer_with_num_threads(1, 15_000_000).unwrap();
        w.set_merge_policy(Box::new(NoMergePolicy));
        for c in 0..3i64 {
            for i in 0..100i64 {
                w.add_document(doc!(f.ts => c * 1000 + i, f.seq => (c * 100 + i) as u64)).unwrap();
            }
            w.commit().unwrap();
        }
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().unwrap();
        let tc = TimeColumns::default();
        let searcher = reader.searcher();
        assert_eq!(searcher.segment_readers().len(), 3);
        let mut bounds = Vec::new();
        for r in searcher.segment_readers() {
            let t = tc.get(r).unwrap();
            assert_eq!(t.ts.max_value() - t.ts.min_value(), 99);
            assert_eq!(t.seq.max_value() - t.seq.min_value(), 99);
            bounds.push(t.ts.min_value());
            // A second request finds it.
            assert_eq!(tc.get(r).unwrap().ts.min_value(), t.ts.min_value());
        }
        bounds.sort_unstable();
        assert_eq!(bounds, vec![0, 1000, 2000]);
        assert_eq!(tc.len(), 3);

        let ids = index.searchable_segment_ids().unwrap();
        w.merge(&ids).wait().unwrap();
        w.commit().unwrap();
        reader.reload().unwrap();
        let searcher = reader.searcher();
        assert_eq!(searcher.segment_readers().len(), 1);
        let merged = &searcher.segment_readers()[0];
        let t = tc.get(merged).unwrap();
        assert_eq!((t.ts.min_value(), t.ts.max_value()), (0, 2099));
        assert_eq!((t.seq.min_value(), t.seq.max_value()), (0, 299));
        assert_eq!(tc.len(), 4);
        tc.retain(&HashSet::from([merged.segment_id()]));
        assert_eq!(tc.len(), 1);
        assert_eq!(tc.get(merged).unwrap().ts.max_value(), 2099);
        tc.retain(&HashSet::new());
        assert!(tc.is_empty());
    }
}
