//! The `file` source's positions registry: for every file it knows, where
//! reading may resume after a restart — the *acknowledged frontier*.
//!
//! Why a frontier and not "the last offset sent": a batch's bytes may only be
//! skipped after a restart once the next hop holds the batch (its
//! [`AckToken`](sluice_core::AckToken) was delivered), and acknowledgements
//! may arrive out of order (several sinks, several workers). Each sent batch
//! is a pending range ending at its end offset; the frontier moves over a
//! prefix of pending ranges only when all of them are delivered. A failed
//! batch (dropped at shutdown) pins the frontier for the rest of the run, so
//! the next start reads it again: at-least-once, and at most the
//! unacknowledged batches are read twice.
//!
//! An entry is one *generation of content* of a file: device + inode plus a
//! fingerprint of the file's first bytes (inodes are reused; a copytruncate
//! rotation keeps the inode but replaces the content). When a file is
//! truncated its old entry becomes an *orphan* that keeps the old content's
//! fingerprint and the offset reached, so a copy of the old content found
//! later (`app.log.1` from copytruncate) resumes there instead of being read
//! again from the start.
//!
//! On disk (`docs/specs/file-positions.md`) the registry is one JSON document
//! replaced atomically: written to a temporary file, fsynced, renamed over
//! the old one, and the directory fsynced. A crash at any point leaves either
//! the old or the new document.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Bytes of a file's start used as its fingerprint.
pub const FINGERPRINT_BYTES: usize = 1024;

/// The registry document's format version.
pub const VERSION: u32 = 1;

/// FNV-1a 64: a stable (across builds and machines) hash of a file prefix.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Registry errors.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The file could not be read or written.
    #[error("positions registry {path}: {source}")]
    Io {
        /// The registry file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The document is not a registry this version understands.
    #[error("positions registry {path} is corrupt: {reason}")]
    Corrupt {
        /// The registry file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// One entry as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskEntry {
    /// Last path the file was seen at.
    pub path: String,
    /// Device number.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// How many leading bytes the fingerprint covers (≤ 1024).
    pub fp_len: u32,
    /// FNV-1a 64 of those bytes, as 16 hex digits.
    pub fp: String,
    /// The acknowledged frontier: reading resumes here.
    pub offset: u64,
    /// An old generation of a truncated file (kept for copies of it).
    #[serde(default)]
    pub orphan: bool,
    /// Unix seconds of the last change.
    pub updated: i64,
}

/// The stored document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskRegistry {
    /// Format version ([`VERSION`]).
    pub version: u32,
    /// Every known file generation.
    pub files: Vec<DiskEntry>,
}

/// Reads a registry file; a missing file is an empty registry.
pub fn load(path: &Path) -> Result<Vec<DiskEntry>, RegistryError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(RegistryError::Io { path: path.into(), source: e }),
    };
    let doc: DiskRegistry = sonic_rs::from_slice(&bytes)
        .map_err(|e| RegistryError::Corrupt { path: path.into(), reason: e.to_string() })?;
    if doc.version != VERSION {
        return Err(RegistryError::Corrupt {
            path: path.into(),
            reason: format!("unsupported version {} (expected {VERSION})", doc.version),
        });
    }
    for e in &doc.files {
        if e.fp_len as usize > FINGERPRINT_BYTES || u64::from_str_radix(&e.fp, 16).is_err() {
            return Err(RegistryError::Corrupt {
                path: path.into(),
                reason: format!("bad fingerprint for {}", e.path),
            });
        }
    }
    Ok(doc.files)
}

/// Replaces the registry file atomically (temp file, fsync, rename, fsync of
/// the directory).
pub fn save(path: &Path, files: Vec<DiskEntry>) -> Result<(), RegistryError> {
    let io = |e| RegistryError::Io { path: path.into(), source: e };
    let doc = DiskRegistry { version: VERSION, files };
    let bytes = sonic_rs::to_vec_pretty(&doc)
        .map_err(|e| RegistryError::Corrupt { path: path.into(), reason: e.to_string() })?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    {
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(&bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    std::fs::rename(&tmp, path).map_err(io)?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
    Ok(())
}

/// How a sent batch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    InFlight,
    Delivered,
    Failed,
}

/// One file generation in memory.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Last path seen.
    pub path: String,
    /// Device and inode.
    pub key: (u64, u64),
    /// The first bytes of the content, up to [`FINGERPRINT_BYTES`], when known
    /// in this run (empty for entries loaded from disk until reopened).
    pub prefix: Vec<u8>,
    /// Fingerprint length and hash (from `prefix`, or as loaded).
    pub fp_len: usize,
    /// See `fp_len`.
    pub fp: u64,
    /// The acknowledged frontier.
    pub acked: u64,
    /// Where the last sent batch ended (what a reader continuing this
    /// content, e.g. on a copy, starts from).
    pub read_pos: u64,
    /// An old generation of a truncated file.
    pub orphan: bool,
    /// A reader has it open.
    pub live: bool,
    /// The file was deleted; forget the entry once fully acknowledged.
    pub deleted: bool,
    /// Unix seconds of the last change.
    pub updated: i64,
    pending: VecDeque<(u64, Slot)>,
}

impl Entry {
    fn new(path: String, key: (u64, u64), offset: u64) -> Self {
        Self {
            path,
            key,
            prefix: Vec::new(),
            fp_len: 0,
            fp: fnv1a(&[]),
            acked: offset,
            read_pos: offset,
            orphan: false,
            live: false,
            deleted: false,
            updated: now_secs(),
            pending: VecDeque::new(),
        }
    }

    /// Records the content's first bytes (grows the fingerprint).
    pub fn set_prefix(&mut self, prefix: &[u8]) {
        let n = prefix.len().min(FINGERPRINT_BYTES);
        if n >= self.prefix.len() && n > 0 {
            self.prefix = prefix[..n].to_vec();
            self.fp_len = n;
            self.fp = fnv1a(&self.prefix);
        }
    }

    /// Whether a file starting with `file_prefix` holds this entry's content.
    /// `cross_inode`: the file is another inode (a copy); then the comparison
    /// must cover the copy's whole known prefix or the full fingerprint length,
    /// so a short common beginning is not taken for a copy.
    pub fn same_content(&self, file_prefix: &[u8], cross_inode: bool) -> bool {
        if !self.prefix.is_empty() {
            if cross_inode {
                let n = self.prefix.len().min(file_prefix.len());
                n > 0 && self.prefix[..n] == file_prefix[..n] && (n == file_prefix.len() || n >= FINGERPRINT_BYTES)
            } else {
                file_prefix.len() >= self.prefix.len() && file_prefix.starts_with(&self.prefix)
            }
        } else {
            let n = self.fp_len;
            if n == 0 {
                return !cross_inode;
            }
            file_prefix.len() >= n
                && fnv1a(&file_prefix[..n]) == self.fp
                && (!cross_inode || n >= FINGERPRINT_BYTES || n == file_prefix.len())
        }
    }

    /// No batch of this entry is waiting for its acknowledgement.
    pub fn settled(&self) -> bool {
        self.pending.is_empty()
    }

    /// Whether a failed batch pins the frontier.
    pub fn stuck(&self) -> bool {
        self.pending.front().is_some_and(|(_, s)| *s == Slot::Failed)
    }

    fn to_disk(&self) -> DiskEntry {
        DiskEntry {
            path: self.path.clone(),
            dev: self.key.0,
            ino: self.key.1,
            fp_len: self.fp_len as u32,
            fp: format!("{:016x}", self.fp),
            offset: self.acked,
            orphan: self.orphan,
            updated: self.updated,
        }
    }
}

/// Unix seconds now.
pub fn now_secs() -> i64 {
    sluice_core::event::now_ns() / 1_000_000_000
}

/// Every entry of one source, by id.
#[derive(Debug, Default)]
pub struct Registry {
    entries: BTreeMap<u64, Entry>,
    next_id: u64,
    /// Changed since the last save.
    pub dirty: bool,
    /// Batches sent and not yet resolved.
    pub in_flight: usize,
}

impl Registry {
    /// A registry holding what was loaded from disk.
    pub fn from_disk(files: Vec<DiskEntry>) -> Self {
        let mut r = Self::default();
        for d in files {
            let mut e = Entry::new(d.path, (d.dev, d.ino), d.offset);
            e.fp_len = d.fp_len as usize;
            e.fp = u64::from_str_radix(&d.fp, 16).unwrap_or(0);
            e.orphan = d.orphan;
            e.updated = d.updated;
            r.insert(e);
        }
        r.dirty = false;
        r
    }

    fn insert(&mut self, e: Entry) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.entries.insert(id, e);
        self.dirty = true;
        id
    }

    /// A new entry for a file generation starting at `offset`.
    pub fn create(&mut self, path: String, key: (u64, u64), offset: u64) -> u64 {
        self.insert(Entry::new(path, key, offset))
    }

    /// An entry by id.
    pub fn get(&self, id: u64) -> Option<&Entry> {
        self.entries.get(&id)
    }

    /// An entry by id, mutably (marks the registry dirty).
    pub fn get_mut(&mut self, id: u64) -> Option<&mut Entry> {
        self.dirty = true;
        self.entries.get_mut(&id)
    }

    /// The current (non-orphan) entry of a device/inode that no reader has open.
    pub fn find_idle_by_key(&self, key: (u64, u64)) -> Option<u64> {
        self.entries.iter().find(|(_, e)| e.key == key && !e.orphan && !e.live).map(|(id, _)| *id)
    }

    /// An entry of another inode whose content `prefix` is a copy of;
    /// `Some((id, live))` where `live` means its file is still being read
    /// (and has not been truncated).
    pub fn find_copy_source(&self, key: (u64, u64), prefix: &[u8]) -> Option<(u64, bool)> {
        // Prefer an orphan (copytruncate: the original was truncated), then a
        // closed entry, then a live one.
        let mut best: Option<(u64, bool, u8)> = None;
        for (id, e) in &self.entries {
            if e.key == key || e.deleted || !e.same_content(prefix, true) {
                continue;
            }
            let rank = if e.orphan {
                0
            } else if !e.live {
                1
            } else {
                2
            };
            if best.is_none_or(|(_, _, r)| rank < r) {
                best = Some((*id, e.live && !e.orphan, rank));
            }
        }
        best.map(|(id, live, _)| (id, live))
    }

    /// Turns an entry into an orphan (its file was truncated or rewritten).
    pub fn orphan(&mut self, id: u64) {
        if let Some(e) = self.get_mut(id) {
            e.orphan = true;
            e.live = false;
            e.updated = now_secs();
        }
    }

    /// Records a batch sent for `id`, ending at `end`.
    pub fn sent(&mut self, id: u64, end: u64) {
        if let Some(e) = self.entries.get_mut(&id) {
            e.pending.push_back((end, Slot::InFlight));
            e.read_pos = end;
            self.in_flight += 1;
        }
    }

    /// Bytes up to `end` were consumed without producing an event (empty
    /// lines): when nothing of the entry is in flight the frontier moves there.
    pub fn consumed(&mut self, id: u64, end: u64) {
        if let Some(e) = self.entries.get_mut(&id) {
            if e.pending.is_empty() && end > e.acked {
                e.acked = end;
                e.read_pos = end;
                e.updated = now_secs();
                self.dirty = true;
            }
        }
    }

    /// A batch's outcome; returns whether the frontier moved.
    pub fn resolve(&mut self, id: u64, end: u64, delivered: bool) -> bool {
        let Some(e) = self.entries.get_mut(&id) else { return false };
        let Ok(i) = e.pending.binary_search_by_key(&end, |(x, _)| *x) else { return false };
        if e.pending[i].1 != Slot::InFlight {
            return false;
        }
        self.in_flight = self.in_flight.saturating_sub(1);
        e.pending[i].1 = if delivered { Slot::Delivered } else { Slot::Failed };
        let mut moved = false;
        while let Some((end, Slot::Delivered)) = e.pending.front().copied() {
            e.pending.pop_front();
            e.acked = end;
            moved = true;
        }
        if moved {
            e.updated = now_secs();
            self.dirty = true;
        }
        moved
    }

    /// Drops entries that are no longer useful, once fully acknowledged:
    /// deleted files at once; orphans, and closed files the last scan did not
    /// find (`seen` holds what it found), after `forget_after_secs` without
    /// change.
    pub fn prune(&mut self, forget_after_secs: i64, seen: &HashSet<(u64, u64)>) {
        let now = now_secs();
        let before = self.entries.len();
        self.entries.retain(|_, e| {
            if e.live || !e.pending.is_empty() {
                return true;
            }
            if e.deleted {
                return false;
            }
            if !e.orphan && seen.contains(&e.key) {
                return true;
            }
            now - e.updated < forget_after_secs
        });
        if self.entries.len() != before {
            self.dirty = true;
        }
    }

    /// The document to store.
    pub fn to_disk(&self) -> Vec<DiskEntry> {
        self.entries.values().map(Entry::to_disk).collect()
    }

    /// Entries (for tests and stats).
    pub fn entries(&self) -> impl Iterator<Item = (u64, &Entry)> {
        self.entries.iter().map(|(id, e)| (*id, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontier_moves_over_contiguous_acks_only() {
        let mut r = Registry::default();
        let id = r.create("a".into(), (1, 2), 0);
        for end in [100, 200, 300, 400] {
            r.sent(id, end);
        }
        assert_eq!(r.in_flight, 4);
        assert!(!r.resolve(id, 300, true), "out of order: frontier stays");
        assert_eq!(r.get(id).unwrap().acked, 0);
        assert!(r.resolve(id, 100, true));
        assert_eq!(r.get(id).unwrap().acked, 100);
        assert!(r.resolve(id, 200, true));
        assert_eq!(r.get(id).unwrap().acked, 300, "200 and the earlier 300 together");
        assert!(!r.resolve(id, 300, true), "a second resolution is ignored");
        assert_eq!(r.in_flight, 1);
        assert!(!r.resolve(id, 400, false));
        assert!(r.get(id).unwrap().stuck());
        r.sent(id, 500);
        assert!(!r.resolve(id, 500, true), "a failed batch pins the frontier");
        assert_eq!(r.get(id).unwrap().acked, 300);
        assert_eq!(r.get(id).unwrap().read_pos, 500);
    }

    #[test]
    fn consumed_moves_only_when_nothing_is_in_flight() {
        let mut r = Registry::default();
        let id = r.create("a".into(), (1, 2), 0);
        r.consumed(id, 10);
        assert_eq!(r.get(id).unwrap().acked, 10);
        r.sent(id, 20);
        r.consumed(id, 30);
        assert_eq!(r.get(id).unwrap().acked, 10);
    }

    #[test]
    fn fingerprints_tell_copies_and_reused_inodes() {
        let content: Vec<u8> = (0..2000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        let mut e = Entry::new("a".into(), (1, 2), 0);
        e.set_prefix(&content[..100]);
        assert!(e.same_content(&content[..FINGERPRINT_BYTES], false), "the same file, grown");
        assert!(!e.same_content(&content[..50], false), "shorter than known: truncated");
        assert!(e.same_content(&content[..100], true), "an exact copy");
        assert!(e.same_content(&content[..60], true), "a copy in progress");
        assert!(!e.same_content(&content[..FINGERPRINT_BYTES], true), "only 100 bytes in common");
        e.set_prefix(&content[..FINGERPRINT_BYTES]);
        assert!(e.same_content(&content[..FINGERPRINT_BYTES], true));
        assert!(!e.same_content(b"other content", true));
        // Loaded from disk: only the hash is known.
        let disk = Registry::from_disk(vec![e.to_disk()]);
        let (_, loaded) = disk.entries().next().unwrap();
        assert!(loaded.prefix.is_empty());
        assert!(loaded.same_content(&content[..FINGERPRINT_BYTES], false));
        assert!(loaded.same_content(&content[..FINGERPRINT_BYTES], true));
        assert!(!loaded.same_content(&content[1..FINGERPRINT_BYTES + 1], false), "inode reused");
    }

    #[test]
    fn save_and_load_round_trip_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("positions.json");
        assert!(load(&path).unwrap().is_empty());
        let mut r = Registry::default();
        let id = r.create("/var/log/a.log".into(), (2049, 77), 0);
        r.get_mut(id).unwrap().set_prefix(b"hello\n");
        r.sent(id, 6);
        r.resolve(id, 6, true);
        save(&path, r.to_disk()).unwrap();
        let back = load(&path).unwrap();
        assert_eq!(back, r.to_disk());
        assert_eq!(back[0].offset, 6);
        assert!(!path.with_extension("json.tmp").exists());
        std::fs::write(&path, b"{\"version\":1,\"files\":[{\"path\":").unwrap();
        assert!(matches!(load(&path), Err(RegistryError::Corrupt { .. })));
        std::fs::write(&path, b"{\"version\":9,\"files\":[]}").unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(err.contains("unsupported version 9"), "{err}");
    }

    #[test]
    fn prune_forgets_settled_entries() {
        let mut r = Registry::default();
        let a = r.create("a".into(), (1, 1), 0);
        let b = r.create("b".into(), (1, 2), 0);
        let c = r.create("c".into(), (1, 3), 0);
        r.get_mut(a).unwrap().deleted = true;
        r.get_mut(b).unwrap().deleted = true;
        r.sent(b, 10);
        r.get_mut(c).unwrap().live = true;
        r.prune(3600, &HashSet::new());
        assert!(r.get(a).is_none());
        assert!(r.get(b).is_some(), "still in flight");
        assert!(r.get(c).is_some());
        r.resolve(b, 10, true);
        r.get_mut(c).unwrap().live = false;
        let seen: HashSet<(u64, u64)> = [(1, 3)].into();
        r.prune(0, &seen);
        assert!(r.get(b).is_none(), "settled and deleted");
        assert!(r.get(c).is_some(), "its file is still there");
        r.prune(0, &HashSet::new());
        assert!(r.get(c).is_none(), "gone and old");
    }
}
