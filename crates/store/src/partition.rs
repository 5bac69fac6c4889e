//! One time partition: a tantivy index covering `[start, start + span)` of
//! event time, in `<store>/<name>` where `name` is `YYYYMMDD` (daily) or
//! `YYYYMMDDTHH` (hourly), UTC.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use serde::{Deserialize, Serialize};
use tantivy::directory::MmapDirectory;
use tantivy::store::{Compressor, ZstdCompressor};
use tantivy::{Index, IndexReader, IndexSettings, ReloadPolicy};

use crate::error::StoreError;
use crate::options::{PartitionSpan, StoreOptions};
use crate::schema::{analyzer, Fields, SCHEMA_VERSION, TEXT_TOKENIZER};
use crate::time_columns::TimeColumns;

/// The JSON commit payload of every partition commit (see `docs/specs/store-format.md`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CommitPayload {
    /// Store format version (1).
    pub format: u32,
    /// Schema version.
    pub schema: u32,
    /// Largest `_seq` committed in this partition.
    pub max_seq: u64,
    /// Queue positions of the records whose events here are committed
    /// ([`crate::replay`]); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queue: Vec<crate::replay::SavedShard>,
}

/// An open partition (readable; its writer, when any, lives in the store's writer state).
pub struct Partition {
    /// Directory name.
    pub name: String,
    /// First nanosecond covered.
    pub start_ns: i64,
    /// First nanosecond not covered.
    pub end_ns: i64,
    /// The index directory.
    pub dir: PathBuf,
    /// The index.
    pub index: Index,
    /// Reader, reloaded after every commit.
    pub reader: IndexReader,
    /// The `_ts` and `_seq` columns of its segments, opened once.
    pub time_columns: Arc<TimeColumns>,
}

/// The directory name of the partition starting at `start_ns`.
pub fn name_of(span: PartitionSpan, start_ns: i64) -> String {
    let t: DateTime<Utc> = DateTime::from_timestamp_nanos(start_ns);
    match span {
        PartitionSpan::Day => t.format("%Y%m%d").to_string(),
        PartitionSpan::Hour => t.format("%Y%m%dT%H").to_string(),
    }
}

/// The start of the partition named `name`, if it is a partition name of this span.
pub fn parse_name(span: PartitionSpan, name: &str) -> Option<i64> {
    let dt = match span {
        PartitionSpan::Day => {
            if name.len() != 8 {
                return None;
            }
            NaiveDate::parse_from_str(name, "%Y%m%d").ok()?.and_time(NaiveTime::MIN)
        }
        PartitionSpan::Hour => {
            if name.len() != 11 {
                return None;
            }
            NaiveDateTime::parse_from_str(&format!("{name}:00"), "%Y%m%dT%H:%M").ok()?
        }
    };
    dt.and_utc().timestamp_nanos_opt()
}

fn settings(opts: &StoreOptions) -> IndexSettings {
    IndexSettings {
        docstore_compression: Compressor::Zstd(ZstdCompressor { compression_level: Some(opts.docstore_zstd_level) }),
        docstore_blocksize: opts.docstore_block_bytes,
        ..IndexSettings::default()
    }
}

impl Partition {
    /// Opens the partition at `root/name`, creating it when `create`.
    pub fn open(
        root: &Path,
        span: PartitionSpan,
        start_ns: i64,
        fields: &Fields,
        opts: &StoreOptions,
    ) -> Result<Self, StoreError> {
        let name = name_of(span, start_ns);
        let dir = root.join(&name);
        let ierr = |e| StoreError::index(name.clone(), e);
        let index = if dir.join("meta.json").exists() {
            let index = Index::open_in_dir(&dir).map_err(ierr)?;
            check_version(&index, &dir, fields)?;
            index
        } else {
            crate::store::create_private_dir(&dir).map_err(|e| StoreError::io("create", &dir, e))?;
            let mmap = MmapDirectory::open(&dir).map_err(|e| ierr(e.into()))?;
            Index::builder()
                .schema(fields.schema.clone())
                .settings(settings(opts))
                .open_or_create(mmap)
                .map_err(ierr)?
        };
        index.tokenizers().register(TEXT_TOKENIZER, analyzer());
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(ierr)?;
        Ok(Self { name, start_ns, end_ns: start_ns + span.nanos(), dir, index, reader, time_columns: Arc::default() })
    }

    /// The last commit's payload (default when never committed).
    pub fn payload(&self) -> Result<CommitPayload, StoreError> {
        let metas = self.index.load_metas().map_err(|e| StoreError::index(self.name.clone(), e))?;
        match metas.payload {
            None => Ok(CommitPayload::default()),
            Some(p) => serde_json::from_str(&p).map_err(|e| StoreError::Corrupt {
                path: self.dir.join("meta.json"),
                message: format!("commit payload: {e}"),
            }),
        }
    }

    /// Committed events.
    pub fn events(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Bytes of the index files.
    pub fn bytes(&self) -> u64 {
        dir_bytes(&self.dir)
    }

    /// Whether the partition overlaps `[from, to)`.
    pub fn overlaps(&self, from_ns: Option<i64>, to_ns: Option<i64>) -> bool {
        from_ns.is_none_or(|f| self.end_ns > f) && to_ns.is_none_or(|t| self.start_ns < t)
    }
}

/// Refuses a partition written with another schema: its documents would be
/// misread (schema 1 stored `_source` as bytes and indexed `attrs`).
fn check_version(index: &Index, dir: &Path, fields: &Fields) -> Result<(), StoreError> {
    let metas = index.load_metas().map_err(|e| StoreError::index(dir.display().to_string(), e))?;
    let schema = match &metas.payload {
        Some(p) => serde_json::from_str::<CommitPayload>(p).map(|p| p.schema).unwrap_or(0),
        None => SCHEMA_VERSION,
    };
    if schema != SCHEMA_VERSION || index.schema() != fields.schema {
        return Err(StoreError::Incompatible {
            path: dir.to_path_buf(),
            message: format!(
                "partition written with store schema {schema}, this version reads schema {SCHEMA_VERSION} only \
                 (see docs/specs/store-format.md); move the partition out of the store directory"
            ),
        });
    }
    Ok(())
}

/// Payload JSON for a commit.
pub fn payload_json(max_seq: u64, queue: Vec<crate::replay::SavedShard>) -> String {
    let p = CommitPayload { format: 1, schema: SCHEMA_VERSION, max_seq, queue };
    serde_json::to_string(&p).unwrap_or_default()
}

/// Total size of the regular files in `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.filter_map(|e| e.ok()).filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let ts = 1_700_000_000_000_000_000; // 2023-11-14T22:13:20Z
        let d = PartitionSpan::Day.start_of(ts);
        assert_eq!(name_of(PartitionSpan::Day, d), "20231114");
        assert_eq!(parse_name(PartitionSpan::Day, "20231114"), Some(d));
        let h = PartitionSpan::Hour.start_of(ts);
        assert_eq!(name_of(PartitionSpan::Hour, h), "20231114T22");
        assert_eq!(parse_name(PartitionSpan::Hour, "20231114T22"), Some(h));
        assert_eq!(parse_name(PartitionSpan::Day, "20231114T22"), None);
    }
}
