//! The `_bulk` ids ledger: which `(index, _id)` pairs a `create` action
//! already stored, so a retried bulk request gets `409
//! version_conflict_engine_exception` per item instead of a second copy
//! (Elasticsearch's `create` semantics, which clients rely on for safe
//! retries; docs/adr/0071-bulk-create-ids-and-refresh.md).
//!
//! sluice's store is append-only and does not look documents up by `_id`,
//! so the source remembers what it accepted: a 128-bit digest (SHA-256,
//! truncated) of `index \0 _id` and when it was accepted, for at most
//! `max` pairs and `ttl` (the oldest go first, counted). A pair enters the
//! ledger only once the pipeline's queue accepted its event, and the ledger
//! file (`<data_dir>/http_created_ids/<pipeline>/<source>.ids`, 24-byte
//! records, mode 0600) is appended before the client is answered: a
//! `kill -9` loses nothing the client saw (the page cache survives the
//! process; a power loss may forget the last writes, and a retry of those
//! is stored twice — at-least-once). The file is rewritten compactly at
//! start and whenever it holds twice `max` records.

use std::collections::{HashMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::Arc;

use parking_lot::Mutex;
use sha2::{Digest as _, Sha256};
use sluice_core::metrics::Counter;

/// One pair's digest.
pub(crate) type Key = u128;

/// Bytes per ledger record: the digest, then the acceptance time (ns, LE).
const RECORD: usize = 24;

/// The ledger of one `http` source.
pub(crate) struct CreatedIds {
    max: usize,
    ttl: Duration,
    path: Option<PathBuf>,
    /// Pairs forgotten before their `ttl` because the ledger was full.
    evicted: Arc<Counter>,
    inner: Mutex<Inner>,
}

struct Inner {
    /// Digest → acceptance time (ns).
    at: HashMap<Key, u64>,
    /// In acceptance order, for expiry (entries whose time no longer matches
    /// `at` were superseded).
    order: VecDeque<(Key, u64)>,
    file: Option<File>,
    /// Records in the file.
    file_records: usize,
}

/// Wall-clock nanoseconds (the ledger's times).
pub(crate) fn now_ns() -> u64 {
    u64::try_from(sluice_core::event::now_ns()).unwrap_or(0)
}

/// The digest of `index` and `id`.
pub(crate) fn key(index: &str, id: &str) -> Key {
    let mut h = Sha256::new();
    h.update(index.as_bytes());
    h.update([0]);
    h.update(id.as_bytes());
    let d = h.finalize();
    let mut k = [0u8; 16];
    k.copy_from_slice(&d[..16]);
    u128::from_le_bytes(k)
}

impl CreatedIds {
    /// Opens (or creates) the ledger at `path`; `None` keeps it in memory
    /// only (`sluice validate`, tests). `evicted` counts pairs forgotten
    /// early because the ledger was full.
    pub(crate) fn open(
        path: Option<PathBuf>,
        max: usize,
        ttl: Duration,
        now_ns: u64,
        evicted: Arc<Counter>,
    ) -> io::Result<Self> {
        let mut inner = Inner { at: HashMap::new(), order: VecDeque::new(), file: None, file_records: 0 };
        if let Some(p) = &path {
            if let Some(dir) = p.parent() {
                fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
            }
            for (k, t) in read_records(p)? {
                inner.at.insert(k, t);
                inner.order.push_back((k, t));
            }
        }
        let ledger = Self { max: max.max(1), ttl, path, evicted, inner: Mutex::new(inner) };
        {
            let mut inner = ledger.inner.lock();
            ledger.expire(&mut inner, now_ns);
            ledger.rewrite(&mut inner)?;
        }
        Ok(ledger)
    }

    /// Whether `key` was accepted within the `ttl`.
    pub(crate) fn contains(&self, key: Key, now_ns: u64) -> bool {
        let inner = self.inner.lock();
        inner.at.get(&key).is_some_and(|&t| now_ns.saturating_sub(t) < self.ttl_ns())
    }

    /// Records `keys` as accepted at `now_ns` (their events are queued).
    /// A file error is returned after the pairs were kept in memory.
    pub(crate) fn insert(&self, keys: &[Key], now_ns: u64) -> io::Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let mut inner = self.inner.lock();
        let mut buf = Vec::with_capacity(keys.len() * RECORD);
        for &k in keys {
            inner.at.insert(k, now_ns);
            inner.order.push_back((k, now_ns));
            buf.extend_from_slice(&k.to_le_bytes());
            buf.extend_from_slice(&now_ns.to_le_bytes());
        }
        self.expire(&mut inner, now_ns);
        if inner.file_records + keys.len() > 2 * self.max {
            return self.rewrite(&mut inner);
        }
        if let Some(f) = inner.file.as_mut() {
            f.write_all(&buf)?;
            inner.file_records += keys.len();
        }
        Ok(())
    }

    /// Pairs remembered now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().at.len()
    }

    fn ttl_ns(&self) -> u64 {
        u64::try_from(self.ttl.as_nanos()).unwrap_or(u64::MAX)
    }

    /// Drops pairs older than the ttl, then the oldest beyond `max`.
    fn expire(&self, inner: &mut Inner, now_ns: u64) {
        let ttl = self.ttl_ns();
        while let Some(&(k, t)) = inner.order.front() {
            let current = inner.at.get(&k) == Some(&t);
            let expired = now_ns.saturating_sub(t) >= ttl;
            if !current {
                inner.order.pop_front();
            } else if expired || inner.at.len() > self.max {
                if !expired {
                    self.evicted.inc();
                }
                inner.at.remove(&k);
                inner.order.pop_front();
            } else {
                break;
            }
        }
    }

    /// Writes the remembered pairs to a new file and renames it over the
    /// ledger (then appends go to it).
    fn rewrite(&self, inner: &mut Inner) -> io::Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        let tmp = path.with_extension("ids.tmp");
        let mut buf = Vec::with_capacity(inner.at.len() * RECORD);
        let mut n = 0;
        for &(k, t) in &inner.order {
            if inner.at.get(&k) == Some(&t) {
                buf.extend_from_slice(&k.to_le_bytes());
                buf.extend_from_slice(&t.to_le_bytes());
                n += 1;
            }
        }
        {
            let mut f = private(&tmp, true)?;
            f.write_all(&buf)?;
            f.sync_all()?;
        }
        fs::rename(&tmp, path)?;
        inner.file = Some(private(path, false)?);
        inner.file_records = n;
        Ok(())
    }
}

fn private(path: &Path, truncate: bool) -> io::Result<File> {
    OpenOptions::new().create(true).append(!truncate).write(true).truncate(truncate).mode(0o600).open(path)
}

/// The records of a ledger file (a torn last record is ignored).
fn read_records(path: &Path) -> io::Result<Vec<(Key, u64)>> {
    let mut raw = Vec::new();
    match File::open(path) {
        Ok(mut f) => {
            f.read_to_end(&mut raw)?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    }
    Ok(raw
        .chunks_exact(RECORD)
        .map(|r| {
            let mut k = [0u8; 16];
            k.copy_from_slice(&r[..16]);
            let mut t = [0u8; 8];
            t.copy_from_slice(&r[16..]);
            (u128::from_le_bytes(k), u64::from_le_bytes(t))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn pairs_are_remembered_across_a_reopen_and_expire_after_the_ttl() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p").join("src.ids");
        let ttl = Duration::from_secs(60);
        let l = CreatedIds::open(Some(path.clone()), 10, ttl, 100 * S, Arc::default()).unwrap();
        let (a, b) = (key("logs", "1"), key("logs", "2"));
        assert_ne!(key("logs", "1"), key("log", "s1"), "index and id are separated");
        l.insert(&[a, b], 100 * S).unwrap();
        assert!(l.contains(a, 101 * S));
        assert!(!l.contains(key("other", "1"), 101 * S), "the index is part of the pair");
        drop(l);
        // A second process (after kill -9: nothing but the file) knows them.
        let l = CreatedIds::open(Some(path.clone()), 10, ttl, 130 * S, Arc::default()).unwrap();
        assert!(l.contains(a, 130 * S) && l.contains(b, 130 * S));
        assert!(!l.contains(a, 160 * S), "forgotten after the ttl");
        drop(l);
        let l = CreatedIds::open(Some(path.clone()), 10, ttl, 200 * S, Arc::default()).unwrap();
        assert_eq!(l.len(), 0);
        assert_eq!(fs::metadata(&path).unwrap().len(), 0, "rewritten without the expired pairs");
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_full_ledger_forgets_the_oldest_and_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("src.ids");
        let l = CreatedIds::open(Some(path.clone()), 3, Duration::from_secs(3600), S, Arc::default()).unwrap();
        let keys: Vec<Key> = (0..5).map(|i| key("i", &i.to_string())).collect();
        for (i, k) in keys.iter().enumerate() {
            l.insert(&[*k], S + i as u64).unwrap();
        }
        assert_eq!(l.len(), 3);
        assert_eq!(l.evicted.get(), 2);
        assert!(!l.contains(keys[0], 2 * S) && !l.contains(keys[1], 2 * S));
        assert!(keys[2..].iter().all(|k| l.contains(*k, 2 * S)));
        // The file was compacted once it held more than twice max records.
        assert!(fs::metadata(&path).unwrap().len() <= (2 * 3 * RECORD) as u64);
        drop(l);
        let l = CreatedIds::open(Some(path), 3, Duration::from_secs(3600), 2 * S, Arc::default()).unwrap();
        assert!(keys[2..].iter().all(|k| l.contains(*k, 2 * S)));
        assert_eq!(l.len(), 3);
    }

    #[test]
    fn a_torn_last_record_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("src.ids");
        let l = CreatedIds::open(Some(path.clone()), 10, Duration::from_secs(60), S, Arc::default()).unwrap();
        l.insert(&[key("i", "a")], S).unwrap();
        drop(l);
        OpenOptions::new().append(true).open(&path).unwrap().write_all(&[1, 2, 3]).unwrap();
        let l = CreatedIds::open(Some(path), 10, Duration::from_secs(60), S, Arc::default()).unwrap();
        assert!(l.contains(key("i", "a"), S));
        assert_eq!(l.len(), 1);
    }
}
