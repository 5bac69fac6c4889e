//! Error type of the persisted queue.
//!
//! One enum for every fallible operation so callers (the runtime) can match on
//! the few variants they react to (`Full`, `Closed`) and log the rest.
//! Corruption variants carry the file path and byte offset so an operator can
//! find the damaged bytes.

use std::io;
use std::path::PathBuf;

use crate::RecordId;

/// Errors returned by [`crate::PersistedQueue`].
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// An I/O operation on `path` failed.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// File or directory the operation targeted.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: io::Error,
    },
    /// `try_append` found the queue over its `max_bytes` capacity.
    #[error("queue is full")]
    Full,
    /// The queue was closed with [`crate::PersistedQueue::close`].
    #[error("queue is closed")]
    Closed,
    /// Another process (or another handle in this process) holds the queue lock.
    #[error("queue directory {path} is locked by another process")]
    Locked {
        /// Path of the lock file.
        path: PathBuf,
    },
    /// A record or header failed validation.
    #[error("corrupt data in {path} at offset {offset}: {reason}")]
    Corrupt {
        /// File containing the bad bytes.
        path: PathBuf,
        /// Byte offset of the bad record or header inside `path`.
        offset: u64,
        /// What check failed.
        reason: &'static str,
    },
    /// A file was written by an unknown (newer) format version.
    #[error("unsupported format version {found} in {path} at offset {offset}")]
    UnsupportedVersion {
        /// File carrying the version field.
        path: PathBuf,
        /// Offset of the version field.
        offset: u64,
        /// Version found on disk.
        found: u32,
    },
    /// `ack` was called with an id that is not currently delivered-and-unacknowledged.
    #[error("unknown or already acknowledged record {0:?}")]
    UnknownRecord(RecordId),
    /// A payload is larger than the format allows.
    #[error("payload of {len} bytes exceeds the maximum of {max} bytes")]
    RecordTooLarge {
        /// Payload length.
        len: usize,
        /// Maximum accepted payload length.
        max: usize,
    },
    /// The configuration is unusable.
    #[error("invalid queue config: {0}")]
    InvalidConfig(String),
}

impl QueueError {
    /// Builds an [`QueueError::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        QueueError::Io { path: path.into(), source }
    }
}
