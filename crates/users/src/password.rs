//! Password hashing: argon2id with the crate's defaults (19 MiB, 2 passes,
//! 1 lane — OWASP's minimum recommendation), stored as a PHC string so the
//! parameters can be raised later without invalidating existing hashes.
//!
//! An unknown user name is checked against [`dummy_hash`], so a login for a
//! name that does not exist costs the same time as one for a name that does.

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher as _, PasswordVerifier as _};
use argon2::Argon2;

use crate::error::UsersError;

/// Longest accepted password (bytes): hashing cost must not be a lever.
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// Hashes `password` with a fresh random salt.
pub fn hash(password: &str) -> Result<String, UsersError> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| UsersError::Internal(format!("argon2: {e}")))
}

/// Whether `password` matches the PHC string `stored`; a corrupt hash never matches.
pub fn verify(password: &str, stored: &str) -> bool {
    if password.len() > MAX_PASSWORD_BYTES {
        return false;
    }
    match PasswordHash::new(stored) {
        Ok(parsed) => Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok(),
        Err(_) => false,
    }
}

/// A hash of a random password, verified against for unknown users.
pub fn dummy_hash() -> Result<String, UsersError> {
    hash(&crate::secret::random_hex(16)?)
}

/// The local password policy: `min_len` characters, at most
/// [`MAX_PASSWORD_BYTES`], not the user name.
pub fn check_policy(username: &str, password: &str, min_len: usize, field: &str) -> Result<(), UsersError> {
    if password.chars().count() < min_len {
        return Err(UsersError::field(field, format!("password must be at least {min_len} characters")));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(UsersError::field(field, format!("password must be at most {MAX_PASSWORD_BYTES} bytes")));
    }
    if password.trim().eq_ignore_ascii_case(username) {
        return Err(UsersError::field(field, "password must not be the user name"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_verify_and_policy() {
        let h = hash("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert!(verify("correct horse battery", &h));
        assert!(!verify("correct horse batterY", &h));
        assert!(!verify("x", "not a phc string"));
        assert_ne!(h, hash("correct horse battery").unwrap(), "salted");
        assert_eq!(
            check_policy("bob", "short", 12, "password").unwrap_err().to_string(),
            "password must be at least 12 characters"
        );
        assert_eq!(
            check_policy("bobbobbobbob", "BOBBOBBOBBOB", 12, "password").unwrap_err().to_string(),
            "password must not be the user name"
        );
        assert!(check_policy("bob", "a long enough one", 12, "password").is_ok());
    }
}
