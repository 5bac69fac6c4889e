//! `[search] backend = "opensearch"`: endpoints, index pattern, auth, CA file.

use std::path::PathBuf;

use serde::Deserialize;

/// How the backend authenticates to OpenSearch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Auth {
    /// No credentials.
    #[default]
    None,
    /// HTTP basic auth; the password is the first line of `password_file`.
    Basic {
        /// User name.
        user: String,
        /// File holding the password.
        password_file: PathBuf,
    },
    /// `Authorization: ApiKey <key>`; the key is the first line of `key_file`.
    ApiKey {
        /// File holding the encoded API key.
        key_file: PathBuf,
    },
}

/// The OpenSearch backend's settings.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenSearchConfig {
    /// Base URLs (`http://host:9200`, `https://…`); requests fail over in order.
    pub endpoints: Vec<String>,
    /// The indices searched: a name or pattern (`sluice-*`), as the
    /// `elasticsearch` sink's `index` produces them.
    #[serde(default = "default_index")]
    pub index: String,
    /// Credentials.
    #[serde(default)]
    pub auth: Auth,
    /// PEM file of the CA that signed the cluster's certificates (https).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// PEM certificate this node presents when the cluster (or a proxy in
    /// front of it) asks for a client certificate; with `client_key_file`.
    #[serde(default)]
    pub client_cert_file: Option<PathBuf>,
    /// PEM private key of `client_cert_file` (PKCS#8, PKCS#1 or SEC1).
    #[serde(default)]
    pub client_key_file: Option<PathBuf>,
    /// Per-request timeout, seconds.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// How often a live tail asks for new events, milliseconds.
    #[serde(default = "default_poll")]
    pub tail_poll_ms: u64,
}

fn default_index() -> String {
    "sluice*".into()
}

fn default_timeout() -> u64 {
    30
}

fn default_poll() -> u64 {
    1000
}

/// A setting that is wrong, naming its key.
#[derive(Debug, thiserror::Error)]
#[error("search.{key}: {msg}")]
pub struct ConfigError {
    /// The key under `[search]`.
    pub key: &'static str,
    /// What is wrong.
    pub msg: String,
}

impl OpenSearchConfig {
    /// A config for `endpoints` and `index` with every other setting at its default.
    pub fn new(endpoints: Vec<String>, index: impl Into<String>) -> Self {
        Self {
            endpoints,
            index: index.into(),
            auth: Auth::None,
            ca_file: None,
            client_cert_file: None,
            client_key_file: None,
            timeout_secs: default_timeout(),
            tail_poll_ms: default_poll(),
        }
    }

    /// Checks every key; the error names the first wrong one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |key, msg: String| Err(ConfigError { key, msg });
        if self.endpoints.is_empty() {
            return err("endpoints", "at least one endpoint is required".into());
        }
        for e in &self.endpoints {
            if !(e.starts_with("http://") || e.starts_with("https://")) {
                return err("endpoints", format!("{e:?} must start with http:// or https://"));
            }
        }
        if self.index.is_empty() || self.index.contains([',', ' ', '/']) {
            return err("index", format!("{:?} must be one index name or pattern (no ',', ' ', '/')", self.index));
        }
        match (&self.client_cert_file, &self.client_key_file) {
            (Some(_), None) => return err("client_key_file", "is required with client_cert_file".into()),
            (None, Some(_)) => return err("client_cert_file", "is required with client_key_file".into()),
            _ => {}
        }
        if self.timeout_secs == 0 {
            return err("timeout_secs", "must be positive".into());
        }
        if self.tail_poll_ms == 0 {
            return err("tail_poll_ms", "must be positive".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_key() {
        let mut c = OpenSearchConfig::new(vec![], "sluice-*");
        assert_eq!(c.validate().unwrap_err().to_string(), "search.endpoints: at least one endpoint is required");
        c.endpoints = vec!["127.0.0.1:9200".into()];
        assert!(c.validate().unwrap_err().to_string().starts_with("search.endpoints: \"127.0.0.1:9200\""));
        c.endpoints = vec!["http://127.0.0.1:9200".into()];
        c.index = "a,b".into();
        assert!(c.validate().unwrap_err().to_string().starts_with("search.index:"));
        c.index = "sluice-*".into();
        assert!(c.validate().is_ok());
        c.client_cert_file = Some("client.pem".into());
        assert_eq!(c.validate().unwrap_err().to_string(), "search.client_key_file: is required with client_cert_file");
        c.client_cert_file = None;
        c.client_key_file = Some("client.key".into());
        assert_eq!(c.validate().unwrap_err().to_string(), "search.client_cert_file: is required with client_key_file");
    }
}
