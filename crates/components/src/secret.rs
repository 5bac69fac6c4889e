//! Secrets in component configs: a token given as `token` (inline),
//! `token_env` (an environment variable) or `token_file` (a file, relative
//! paths under the node's data directory), exactly one of them. Used by the
//! agent protocol's source (tokens it accepts) and sink (the token it sends).
//!
//! Not a component: it has no `SPEC`. A sender's missing `token_file` is an
//! error; a receiver may create it ([`TokenSource::resolve_or_create`]: 32
//! random bytes as hex, mode 0600, as the API's admin token), so a single
//! node works out of the box and its agents read the same file.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Shortest accepted token.
pub const MIN_TOKEN_LEN: usize = 16;

/// Where a token comes from (flattened into a component's table).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSource {
    /// The token itself (prefer `token_env` or `token_file`).
    #[serde(default)]
    pub token: Option<String>,
    /// An environment variable holding the token.
    #[serde(default)]
    pub token_env: Option<String>,
    /// A file holding the token (surrounding whitespace ignored).
    #[serde(default)]
    pub token_file: Option<PathBuf>,
}

impl TokenSource {
    /// Like [`TokenSource::resolve`], but a `token_file` that does not exist
    /// is created with a random token (mode 0600) and its path logged.
    ///
    /// With `dry_run` (`sluice validate`) nothing is created: a missing
    /// `token_file` is valid (it will be created at start) and stands for a
    /// secret of its own (a placeholder naming the file, unique per path).
    pub fn resolve_or_create(&self, data_dir: &Path, dry_run: bool) -> Result<String, (&'static str, String)> {
        if let (None, None, Some(file)) = (&self.token, &self.token_env, &self.token_file) {
            let path = under(data_dir, file);
            if !path.exists() {
                if dry_run {
                    return Ok(format!("(created at start: {})", path.display()));
                }
                sluice_core::secret::create_token_file(&path).map_err(|m| ("token_file", m))?;
                tracing::info!(path = %path.display(), "generated a token (mode 0600); give senders the same token_file");
            }
        }
        self.resolve(data_dir)
    }

    /// Reads the secret. Errors are `(key, message)` with the key below the
    /// table (`token`, `token_env`, `token_file`) for the caller's path.
    pub fn resolve(&self, data_dir: &Path) -> Result<String, (&'static str, String)> {
        let set = [self.token.is_some(), self.token_env.is_some(), self.token_file.is_some()];
        if set.iter().filter(|b| **b).count() != 1 {
            return Err(("token", "set exactly one of `token`, `token_env` and `token_file`".into()));
        }
        let (key, secret) = if let Some(t) = &self.token {
            ("token", t.clone())
        } else if let Some(var) = &self.token_env {
            match std::env::var(var) {
                Ok(s) => ("token_env", s.trim().to_string()),
                Err(_) => return Err(("token_env", format!("environment variable {var} is not set"))),
            }
        } else if let Some(file) = &self.token_file {
            let path = under(data_dir, file);
            match std::fs::read_to_string(&path) {
                Ok(s) => ("token_file", s.trim().to_string()),
                Err(e) => return Err(("token_file", format!("cannot read {}: {e}", path.display()))),
            }
        } else {
            return Err(("token", "set exactly one of `token`, `token_env` and `token_file`".into()));
        };
        if secret.chars().count() < MIN_TOKEN_LEN {
            return Err((key, format!("the token must be at least {MIN_TOKEN_LEN} characters")));
        }
        Ok(secret)
    }
}

/// `file` under `data_dir` (absolute paths as they are), with `..` resolved
/// lexically so `../other-node/agent.token` works before `data_dir` exists.
fn under(data_dir: &Path, file: &Path) -> PathBuf {
    if file.is_absolute() {
        return file.to_path_buf();
    }
    let mut out = PathBuf::new();
    for c in data_dir.join(file).components() {
        match c {
            std::path::Component::ParentDir
                if matches!(out.components().next_back(), Some(std::path::Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Compares two secrets in constant time (one implementation for the tree).
pub use sluice_core::secret::ct_eq;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_source_and_a_minimum_length() {
        let t = TokenSource { token: Some("0123456789abcdef".into()), ..Default::default() };
        assert_eq!(t.resolve(Path::new("/")).unwrap(), "0123456789abcdef");
        let none = TokenSource::default();
        assert_eq!(none.resolve(Path::new("/")).unwrap_err().0, "token");
        let short = TokenSource { token: Some("short".into()), ..Default::default() };
        assert_eq!(short.resolve(Path::new("/")).unwrap_err().1, "the token must be at least 16 characters");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t"), "fedcba9876543210fedcba\n").unwrap();
        let f = TokenSource { token_file: Some("t".into()), ..Default::default() };
        assert_eq!(f.resolve(dir.path()).unwrap(), "fedcba9876543210fedcba");
        // `..` is resolved without the data directory existing.
        let up = TokenSource { token_file: Some("../t".into()), ..Default::default() };
        assert_eq!(up.resolve(&dir.path().join("not-created")).unwrap(), "fedcba9876543210fedcba");
        let missing = TokenSource { token_file: Some("nope".into()), ..Default::default() };
        let (key, msg) = missing.resolve(dir.path()).unwrap_err();
        assert_eq!(key, "token_file");
        assert!(msg.starts_with("cannot read "), "{msg}");
        let env = TokenSource { token_env: Some("SLUICE_TEST_SURELY_UNSET_AGENT_TOKEN".into()), ..Default::default() };
        assert_eq!(
            env.resolve(dir.path()).unwrap_err().1,
            "environment variable SLUICE_TEST_SURELY_UNSET_AGENT_TOKEN is not set"
        );
    }

    #[test]
    fn a_receiver_creates_a_missing_token_file_once() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let f = TokenSource { token_file: Some("sub/agent.token".into()), ..Default::default() };
        // Checking a config creates nothing.
        let planned = f.resolve_or_create(dir.path(), true).unwrap();
        assert!(planned.starts_with("(created at start: "), "{planned}");
        assert!(!dir.path().join("sub").exists());
        let first = f.resolve_or_create(dir.path(), false).unwrap();
        assert_eq!(first.len(), 64);
        let meta = std::fs::metadata(dir.path().join("sub/agent.token")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(f.resolve_or_create(dir.path(), false).unwrap(), first);
        assert_eq!(f.resolve_or_create(dir.path(), true).unwrap(), first);
        assert_eq!(f.resolve(dir.path()).unwrap(), first);
    }
}
