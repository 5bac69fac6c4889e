//! The queue's epoch (`<dir>/queue.id`): a random 64-bit id that, with a
//! record's shard, segment and offset, names the record for as long as the
//! queue may deliver it again. A sink that remembers what it stored by those
//! names (the embedded store) relies on a name never meaning two records.
//!
//! Positions are only reused when the queue lost bytes it had written — a
//! power loss or kernel crash before they reached the disk, after which
//! recovery truncates and later appends land at the same offsets — or when
//! the directory is replaced. A process crash (`kill -9`) loses nothing
//! written, so the epoch survives it. The file records the kernel's boot id
//! (`/proc/sys/kernel/random/boot_id`); a new epoch is drawn when the file
//! is missing, unreadable, or written under another boot. Format (text):
//!
//! ```text
//! epoch <16 hex digits>
//! boot <boot id>
//! ```

use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use crate::error::QueueError;

/// The epoch file's name.
pub const EPOCH_FILE: &str = "queue.id";

/// Reads the epoch of the queue in `dir`, drawing (and writing) a new one
/// when there is none for this boot.
pub fn open(dir: &Path) -> Result<u64, QueueError> {
    let boot = boot_id();
    let path = dir.join(EPOCH_FILE);
    if let Ok(text) = std::fs::read_to_string(&path) {
        if let Some((epoch, b)) = parse(&text) {
            if b == boot {
                return Ok(epoch);
            }
        }
    }
    let epoch = random_u64().map_err(|e| QueueError::io(Path::new("/dev/urandom"), e))?;
    let tmp = dir.join(format!("{EPOCH_FILE}.tmp"));
    let text = format!("epoch {epoch:016x}\nboot {boot}\n");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| QueueError::io(&tmp, e))?;
    f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).map_err(|e| QueueError::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| QueueError::io(&path, e))?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| QueueError::io(dir, e))?;
    Ok(epoch)
}

fn parse(text: &str) -> Option<(u64, String)> {
    let mut epoch = None;
    let mut boot = None;
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("epoch", v)) => epoch = u64::from_str_radix(v.trim(), 16).ok(),
            Some(("boot", v)) => boot = Some(v.trim().to_string()),
            _ => {}
        }
    }
    Some((epoch?, boot?))
}

/// This boot's id (empty where the kernel does not provide one: then every
/// open keeps the epoch, as after a process crash).
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

fn random_u64() -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_across_opens_of_one_boot_and_redrawn_for_another() {
        let d = tempfile::tempdir().unwrap();
        let a = open(d.path()).unwrap();
        assert_eq!(open(d.path()).unwrap(), a);
        // Written under another boot: positions may have been reused.
        std::fs::write(d.path().join(EPOCH_FILE), format!("epoch {a:016x}\nboot some-other-boot\n")).unwrap();
        let b = open(d.path()).unwrap();
        assert_ne!(a, b);
        assert_eq!(open(d.path()).unwrap(), b);
        // Damaged: a new one.
        std::fs::write(d.path().join(EPOCH_FILE), "garbage").unwrap();
        assert_ne!(open(d.path()).unwrap(), b);
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(d.path().join(EPOCH_FILE)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
