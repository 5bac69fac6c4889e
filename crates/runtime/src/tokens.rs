//! Resolves the static API tokens of `[api.tokens.<name>]` to their secrets
//! at start-up.
//!
//! - `token = "…"`: used as written;
//! - `token_env = "VAR"`: read from the environment; unset or too short is a
//!   start-up error naming the key;
//! - `token_file = "admin.token"`: read from the file (relative to
//!   `node.data_dir`). When the file does not exist, a random token (32 bytes
//!   from `/dev/urandom`, hex) is generated and written with mode `0600`, and
//!   the path — never the token — is logged. This gives a single node a
//!   working admin token on first start without a secret in the config file.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use sluice_core::config::ConfigError;
use sluice_query::SourcePattern;

use crate::config::{ApiConfig, MIN_TOKEN_LEN};

/// A token with its secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ResolvedToken {
    /// The name under `[api.tokens]` (becomes the principal's name).
    pub name: String,
    /// The secret clients send as `Authorization: Bearer <secret>`.
    pub secret: String,
    /// What it may read.
    pub allowed: Vec<SourcePattern>,
}

impl std::fmt::Debug for ResolvedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedToken").field("name", &self.name).field("allowed", &self.allowed).finish()
    }
}

/// Resolves every token (reading the environment and token files, creating
/// missing token files); reports every problem with its key path.
pub fn resolve(api: &ApiConfig, data_dir: &Path) -> Result<Vec<ResolvedToken>, Vec<ConfigError>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (name, t) in &api.tokens {
        let path = format!("api.tokens.{name}");
        let secret = if let Some(s) = &t.token {
            Ok(s.clone())
        } else if let Some(var) = &t.token_env {
            match std::env::var(var) {
                Ok(s) if s.trim().chars().count() >= MIN_TOKEN_LEN => Ok(s.trim().to_string()),
                Ok(_) => Err(ConfigError::new(
                    format!("{path}.token_env"),
                    format!("environment variable {var} must hold at least {MIN_TOKEN_LEN} characters"),
                )),
                Err(_) => {
                    Err(ConfigError::new(format!("{path}.token_env"), format!("environment variable {var} is not set")))
                }
            }
        } else if let Some(file) = &t.token_file {
            let file = if file.is_absolute() { file.clone() } else { data_dir.join(file) };
            token_file(name, &file).map_err(|m| ConfigError::new(format!("{path}.token_file"), m))
        } else {
            Err(ConfigError::new(&path, "set exactly one of `token`, `token_env` and `token_file`"))
        };
        match secret {
            Ok(secret) => out.push(ResolvedToken { name: name.clone(), secret, allowed: t.allowed.clone() }),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Reads the token in `path`, creating it with a random token when missing.
fn token_file(name: &str, path: &PathBuf) -> Result<String, String> {
    match std::fs::read_to_string(path) {
        Ok(s) => {
            let mode = std::fs::metadata(path).map(|m| m.permissions().mode()).unwrap_or(0);
            if mode & 0o077 != 0 {
                tracing::warn!(token = name, path = %path.display(), mode = format!("{:o}", mode & 0o777), "token file is readable by other users; chmod 600 it");
            }
            let s = s.trim().to_string();
            if s.chars().count() < MIN_TOKEN_LEN {
                return Err(format!("{} must hold at least {MIN_TOKEN_LEN} characters", path.display()));
            }
            Ok(s)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = sluice_core::secret::create_token_file(path)?;
            tracing::info!(token = name, path = %path.display(), "generated an API token (mode 0600); send it as `Authorization: Bearer <contents of the file>`");
            Ok(token)
        }
        Err(e) => Err(format!("read {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TokenConfig;

    fn api(t: TokenConfig) -> ApiConfig {
        ApiConfig {
            address: String::new(),
            tokens: [("admin".to_string(), t)].into_iter().collect(),
            ..ApiConfig::default()
        }
    }

    fn cfg() -> TokenConfig {
        TokenConfig { token: None, token_env: None, token_file: None, allowed: vec![SourcePattern::all()] }
    }

    #[test]
    fn token_file_is_created_once_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let a = api(TokenConfig { token_file: Some("sub/admin.token".into()), ..cfg() });
        let first = resolve(&a, dir.path()).unwrap();
        assert_eq!(first[0].secret.len(), 64);
        assert_eq!(first[0].name, "admin");
        let file = dir.path().join("sub/admin.token");
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{}\n", first[0].secret));
        let second = resolve(&a, dir.path()).unwrap();
        assert_eq!(first, second);
    }

    #[test]
    fn missing_env_names_the_key() {
        let a = api(TokenConfig { token_env: Some("SLUICE_TEST_SURELY_UNSET_TOKEN".into()), ..cfg() });
        let e = resolve(&a, Path::new("/nonexistent")).unwrap_err();
        assert_eq!(
            e[0].to_string(),
            "api.tokens.admin.token_env: environment variable SLUICE_TEST_SURELY_UNSET_TOKEN is not set"
        );
        let a = api(TokenConfig { token: Some("0123456789abcdef".into()), ..cfg() });
        assert_eq!(resolve(&a, Path::new("/nonexistent")).unwrap()[0].secret, "0123456789abcdef");
    }
}
