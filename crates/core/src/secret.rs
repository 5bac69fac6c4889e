//! Secrets, in one place for every crate: comparison in constant time,
//! randomness from the operating system, files only their owner can read,
//! and the machine's host name.
//!
//! - [`ct_eq`] takes time that depends only on the longer input's length:
//!   not on where the inputs differ, and not on whether their lengths match
//!   (no early return), with `subtle`'s optimisation barriers so the compiler
//!   cannot turn it back into a short-circuiting loop.
//! - [`fill_random`] / [`random_hex`] read the OS generator (`getrandom`:
//!   `getrandom(2)` on Linux), never a seeded PRNG.
//! - [`create_private_file`] creates a new file with mode `0600` (parents
//!   created as needed) and syncs it; it never overwrites.
//! - [`hostname`] is the one reading of the host name: the default `host` of
//!   identities, the node name, the agent protocol's sender name.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use subtle::ConstantTimeEq as _;

/// Whether `a == b`, in time independent of the contents and of whether the
/// lengths match (it depends only on the longer input's length).
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().max(b.len());
    let mut equal = (a.len() as u64).ct_eq(&(b.len() as u64));
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        equal &= x.ct_eq(&y);
    }
    equal.into()
}

/// Fills `buf` from the operating system's random generator.
pub fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    getrandom::fill(buf).map_err(|e| std::io::Error::other(format!("no randomness: {e}")))
}

/// `n` random bytes as `2n` lower-case hex characters.
pub fn random_hex(n: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; n];
    fill_random(&mut bytes)?;
    Ok(hex(&bytes))
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(D[usize::from(b >> 4)]));
        s.push(char::from(D[usize::from(b & 15)]));
    }
    s
}

/// Creates `path` (and its missing parents) with mode `0600`, writes
/// `contents` and syncs it. An existing file is an error, never overwritten.
/// Errors name the path (`create …: …`, `write …: …`).
pub fn create_private_file(path: &Path, contents: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("create {}: {e}", path.display()))?;
    f.write_all(contents).and_then(|()| f.sync_all()).map_err(|e| format!("write {}: {e}", path.display()))
}

/// Creates a token file (see [`create_private_file`]) holding 32 random
/// bytes as 64 hex characters and a newline; returns the token.
pub fn create_token_file(path: &Path) -> Result<String, String> {
    let token = random_hex(32).map_err(|e| format!("generating a token: {e}"))?;
    create_private_file(path, format!("{token}\n").as_bytes())?;
    Ok(token)
}

/// The machine's host name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`).
pub fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn constant_time_equality_compares_whole_inputs_of_any_length() {
        assert!(ct_eq(b"", b""));
        assert!(ct_eq(b"secret-token", b"secret-token"));
        assert!(!ct_eq(b"secret-token", b"secret-tokeN"));
        assert!(!ct_eq(b"secret-token", b"Secret-token"));
        // A prefix, and a longer input padded with what would be zeros.
        assert!(!ct_eq(b"secret", b"secret-token"));
        assert!(!ct_eq(b"secret-token", b"secret"));
        assert!(!ct_eq(b"abc", b"abc\0"));
        assert!(!ct_eq(b"", b"\0"));
    }

    #[test]
    fn random_hex_is_hex_of_the_asked_length_and_differs() {
        let a = random_hex(32).unwrap();
        let b = random_hex(32).unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{a}");
        assert_ne!(a, b);
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }

    #[test]
    fn token_files_are_private_new_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/dir/api.token");
        let token = create_token_file(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{token}\n"));
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let err = create_token_file(&path).unwrap_err();
        assert!(err.starts_with(&format!("create {}: ", path.display())), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{token}\n"));
    }

    #[test]
    fn hostname_is_the_kernels() {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
        assert_eq!(hostname().as_deref(), Some(kernel.as_str()).filter(|s| !s.is_empty()));
    }
}
