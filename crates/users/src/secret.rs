//! Random secrets and their stored forms. Session ids, API token secrets and
//! recovery codes are long random strings, so the database keeps only their
//! SHA-256 (a leaked database reveals none of them); passwords, which are
//! guessable, get argon2id ([`crate::password`]).

use sha2::{Digest, Sha256};

use crate::error::UsersError;

/// `n` random bytes from the operating system.
pub fn random_bytes(n: usize) -> Result<Vec<u8>, UsersError> {
    let mut b = vec![0u8; n];
    sluice_core::secret::fill_random(&mut b).map_err(|e| UsersError::Internal(e.to_string()))?;
    Ok(b)
}

/// Lower-case hex.
pub use sluice_core::secret::hex;

/// `n` random bytes as hex.
pub fn random_hex(n: usize) -> Result<String, UsersError> {
    random_bytes(n).map(|b| hex(&b))
}

/// SHA-256 of `s`, hex.
pub fn sha256_hex(s: &[u8]) -> String {
    hex(&Sha256::digest(s))
}

/// SHA-256 of `parts` joined with NUL separators, hex (domain-separated hashes).
pub fn sha256_parts(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.update([0u8]);
        }
        h.update(p);
    }
    hex(&h.finalize())
}

/// Constant-time equality (one implementation for the tree).
pub use sluice_core::secret::ct_eq;

/// A random password of `len` characters from an unambiguous alphabet.
pub fn random_password(len: usize) -> Result<String, UsersError> {
    const ALPHABET: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    // 256 % 57 != 0: reject bytes in the uneven tail so every character is equally likely.
    let limit = 256 - 256 % ALPHABET.len();
    let mut out = String::with_capacity(len);
    while out.len() < len {
        for b in random_bytes(len * 2)? {
            if usize::from(b) < limit && out.len() < len {
                out.push(char::from(ALPHABET[usize::from(b) % ALPHABET.len()]));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_and_hex() {
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_ne!(sha256_parts(&[b"a", b"bc"]), sha256_parts(&[b"ab", b"c"]));
        assert!(ct_eq(b"abc", b"abc") && !ct_eq(b"abc", b"abd") && !ct_eq(b"abc", b"ab"));
        let p = random_password(20).unwrap();
        assert_eq!(p.len(), 20);
        assert_ne!(p, random_password(20).unwrap());
        assert_eq!(random_hex(32).unwrap().len(), 64);
    }
}
