//! The sink's settings, checked when the config is built: every error names
//! its key (`endpoints[1]`, `tls.ca`, `basic_auth.password_file`, …).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sluice_core::component::BuildContext;
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration, Positive};

use super::bulk::Action;
use super::endpoints::Endpoint;
use super::index_name::IndexName;
use crate::http_client::{bad_value, parse_uri};
use crate::tls::{connector, ClientTls};

/// Request body compression.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(super) enum Compression {
    /// `Content-Encoding: gzip` at the fastest level (default).
    Gzip,
    /// Plain bodies.
    None,
}

/// `basic_auth = { user = "sluice", password_file = "os.pass" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BasicAuth {
    user: String,
    /// A file holding the password (surrounding whitespace ignored;
    /// relative paths under the node's data directory).
    password_file: PathBuf,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Config {
    /// One base URL, `http(s)://host:port[/prefix]` (or use `endpoints`).
    #[serde(default)]
    endpoint: Option<String>,
    /// Several base URLs of the same cluster, tried in order with failover.
    #[serde(default)]
    endpoints: Vec<String>,
    /// Target index (see `index_name.rs`).
    #[serde(default = "default_index")]
    index: String,
    /// `create` (default) or `index`.
    #[serde(default = "default_action")]
    action: Action,
    /// TLS for `https://` endpoints: `{ ca = "ca.pem", cert = …, key = …, server_name = … }`.
    #[serde(default)]
    tls: Option<ClientTls>,
    /// Sent as `Authorization: ApiKey <key>` (prefer `api_key_file`).
    #[serde(default)]
    api_key: Option<String>,
    /// A file holding the API key.
    #[serde(default)]
    api_key_file: Option<PathBuf>,
    /// HTTP basic authentication.
    #[serde(default)]
    basic_auth: Option<BasicAuth>,
    /// `gzip` (default) or `none`.
    #[serde(default = "default_compression")]
    compression: Compression,
    /// Install the index template before the first document (default true).
    #[serde(default = "default_true")]
    install_template: bool,
    /// The template's name (default `sluice`).
    #[serde(default = "default_template_name")]
    template_name: String,
    /// `index.mapping.total_fields.limit` of the indices the template matches.
    #[serde(default = "crate::defaults::count_u32::<1000>")]
    total_fields_limit: Positive<u32>,
    /// How long a failed endpoint is skipped.
    #[serde(default = "crate::defaults::secs::<10>")]
    endpoint_retry: Positive<HumanDuration>,
    /// Longest time for one request.
    #[serde(default = "crate::defaults::secs::<60>")]
    timeout: Positive<HumanDuration>,
    /// Largest request body (before compression); bigger batches are split.
    #[serde(default = "crate::defaults::mib::<10>")]
    max_batch_bytes: Positive<ByteSize>,
    /// Retries of documents answered 429 / 5xx within one write.
    #[serde(default = "default_item_retries")]
    max_item_retries: u32,
    /// First wait before retrying failed documents (doubles each time, at most 30 s).
    #[serde(default = "crate::defaults::millis::<200>")]
    retry_backoff: Positive<HumanDuration>,
    /// Where rejected documents are appended (ndjson with status and error).
    #[serde(default)]
    dead_letter_path: Option<PathBuf>,
}

fn default_index() -> String {
    "sluice-%{@group}-%Y.%m.%d".into()
}
fn default_action() -> Action {
    Action::Create
}
fn default_compression() -> Compression {
    Compression::Gzip
}
fn default_true() -> bool {
    true
}
fn default_template_name() -> String {
    "sluice".into()
}
fn default_item_retries() -> u32 {
    5
}

/// The checked settings the sink runs with.
pub(super) struct Settings {
    pub(super) endpoints: Vec<Endpoint>,
    pub(super) auth: String,
    pub(super) gzip: bool,
    pub(super) index: IndexName,
    pub(super) action: Action,
    /// `(name, body)` of the template to install, if any.
    pub(super) template: Option<(String, Vec<u8>)>,
    pub(super) endpoint_retry: Duration,
    pub(super) timeout: Duration,
    pub(super) max_batch: usize,
    pub(super) max_retries: u32,
    pub(super) backoff: Duration,
    pub(super) dead_letter: Option<PathBuf>,
}

fn under(data_dir: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        data_dir.join(p)
    }
}

/// Reads a one-line secret from `file`; errors name `key`.
fn read_secret(cx: &BuildContext, key: &str, file: &Path) -> Result<String, ConfigError> {
    let path = under(&cx.data_dir, file);
    let s =
        std::fs::read_to_string(&path).map_err(|e| cx.error(key, format!("cannot read {}: {e}", path.display())))?;
    let s = s.trim().to_string();
    if s.is_empty() || bad_value(&s) {
        return Err(cx.error(key, format!("{} must hold one non-empty line", path.display())));
    }
    Ok(s)
}

/// The `Authorization` header line (with CRLF), or empty.
fn auth_header(c: &Config, cx: &BuildContext) -> Result<String, ConfigError> {
    let key = match (&c.api_key, &c.api_key_file) {
        (Some(_), Some(_)) => return Err(cx.error("api_key_file", "set only one of api_key and api_key_file")),
        (Some(k), None) => {
            if k.is_empty() || bad_value(k) {
                return Err(cx.error("api_key", "must be non-empty and contain no line breaks"));
            }
            Some(k.clone())
        }
        (None, Some(f)) => Some(read_secret(cx, "api_key_file", f)?),
        (None, None) => None,
    };
    match (key, &c.basic_auth) {
        (Some(_), Some(_)) => Err(cx.error("basic_auth", "set either an API key or basic_auth, not both")),
        (Some(k), None) => Ok(format!("Authorization: ApiKey {k}\r\n")),
        (None, Some(b)) => {
            if b.user.is_empty() || b.user.contains(':') || bad_value(&b.user) {
                return Err(cx.error("basic_auth.user", "must be non-empty, without ':' or line breaks"));
            }
            let pass = read_secret(cx, "basic_auth.password_file", &b.password_file)?;
            let token =
                <base64ct::Base64 as base64ct::Encoding>::encode_string(format!("{}:{pass}", b.user).as_bytes());
            Ok(format!("Authorization: Basic {token}\r\n"))
        }
        (None, None) => Ok(String::new()),
    }
}

/// The endpoints, each with its TLS connector for `https://`.
fn endpoints(c: &Config, cx: &BuildContext) -> Result<Vec<Endpoint>, ConfigError> {
    let (key, urls): (&str, Vec<&String>) = match (&c.endpoint, c.endpoints.is_empty()) {
        (Some(_), false) => return Err(cx.error("endpoints", "set either endpoint or endpoints, not both")),
        (Some(e), true) => ("endpoint", vec![e]),
        (None, false) => ("endpoints", c.endpoints.iter().collect()),
        (None, true) => return Err(cx.error("endpoints", "set endpoint or endpoints (the cluster's base URLs)")),
    };
    let mut out = Vec::new();
    let mut any_tls = false;
    for (i, url) in urls.iter().enumerate() {
        let k = if key == "endpoint" { key.to_string() } else { format!("endpoints[{i}]") };
        let uri = parse_uri(url.trim_end_matches('/')).map_err(|m| cx.error(&k, m.to_string()))?;
        if uri.target.contains('?') {
            return Err(cx.error(&k, "must not contain a query string"));
        }
        let tls = match (&c.tls, uri.tls) {
            (Some(t), true) => Some(connector(t, &uri.connect).map_err(|(tk, m)| cx.error(&format!("tls.{tk}"), m))?),
            (None, true) => return Err(cx.error(
                &k,
                "an https:// endpoint needs tls = { ca = \"ca.pem\" } (the CA that signed the server's certificate)",
            )),
            (_, false) => None,
        };
        any_tls |= uri.tls;
        out.push(Endpoint::new(uri, tls));
    }
    if c.tls.is_some() && !any_tls {
        return Err(cx.error("tls", "only valid with https:// endpoints"));
    }
    Ok(out)
}

/// Checks `value` and builds the settings.
pub(super) fn settings(value: toml::Value, cx: &BuildContext) -> Result<Settings, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let endpoints = endpoints(&c, cx)?;
    let index = IndexName::parse(&c.index).map_err(|m| cx.error("index", m))?;
    for (key, d) in [("timeout", c.timeout), ("retry_backoff", c.retry_backoff), ("endpoint_retry", c.endpoint_retry)] {
        if d.0.is_zero() {
            return Err(cx.error(key, "must be greater than 0"));
        }
    }
    let template = if c.install_template {
        if index.prefix().is_empty() {
            return Err(cx.error(
                "index",
                "must start with literal text (the index template matches <prefix>*); or set install_template = false",
            ));
        }
        if c.template_name.is_empty()
            || !c.template_name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            return Err(cx.error("template_name", "must be non-empty: letters, digits, - _ . only"));
        }
        Some((c.template_name.clone(), super::template::body(index.prefix(), c.total_fields_limit.get())))
    } else {
        None
    };
    Ok(Settings {
        auth: auth_header(&c, cx)?,
        endpoints,
        gzip: c.compression == Compression::Gzip,
        index,
        action: c.action,
        template,
        endpoint_retry: c.endpoint_retry.0,
        timeout: c.timeout.0,
        max_batch: usize::try_from(c.max_batch_bytes.0).unwrap_or(usize::MAX),
        max_retries: c.max_item_retries,
        backoff: c.retry_backoff.0,
        dead_letter: c.dead_letter_path,
    })
}
