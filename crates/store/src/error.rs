//! Errors of the store.

use std::path::PathBuf;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file-system operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done (`create`, `read`, `remove`).
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The index engine failed.
    #[error("index {partition}: {source}")]
    Index {
        /// The partition directory name (or `-` when none applies).
        partition: String,
        /// The engine's error.
        source: tantivy::TantivyError,
    },
    /// The store is already open in this process with different options, or
    /// its on-disk layout was written with a different partition span.
    #[error("store {path}: {message}")]
    Conflict {
        /// The store's directory.
        path: PathBuf,
        /// What differs.
        message: String,
    },
    /// A file of the store does not have the expected content.
    #[error("corrupt store file {path}: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A partition was written by a version of the store with another
    /// schema: it is refused rather than misread.
    #[error("incompatible store partition {path}: {message}")]
    Incompatible {
        /// The partition directory.
        path: PathBuf,
        /// Which versions, and what to do.
        message: String,
    },
    /// An option value is invalid.
    #[error("invalid store option {key}: {message}")]
    Option {
        /// The option name.
        key: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The store was closed.
    #[error("store is closed")]
    Closed,
}

impl StoreError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io { op, path: path.into(), source }
    }

    pub(crate) fn index(partition: impl Into<String>, source: tantivy::TantivyError) -> Self {
        Self::Index { partition: partition.into(), source }
    }
}
