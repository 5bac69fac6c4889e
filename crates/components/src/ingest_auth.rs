//! Who may write through the HTTP ingest sources (`http`, `splunk_hec`):
//! ingest tokens, and the refusal
//! of requests a web page can make.
//!
//! **Tokens** (`[…sources.<id>.tokens.<name>]`, as the agent port's): one of
//! `token`, `token_env`, `token_file` (a missing `token_file` is created with
//! a random token, mode 0600, on first start — not by `sluice validate`),
//! the `group` its events belong to and optionally their `subgroup` and
//! `host`. Every event of a request gets its token's identity; identity keys
//! in the payload (`@group`, …) are never read, so a sender cannot write as
//! another group. The secret is accepted in each form
//! [`sluice_parsers::http_auth`] lists (Bearer, ApiKey raw or
//! `base64(id:token)`, Basic with the token as password) and compared in
//! constant time with every token. `auth = "none"` serves without tokens
//! (only behind something that authenticates: anyone who reaches the port
//! can then write any group's logs).
//!
//! **Browsers.** A page on any site can make a visitor's browser send a
//! "simple" request (no preflight): a form post or a `fetch` with
//! `text/plain`, `application/x-www-form-urlencoded` or
//! `multipart/form-data`. On the ingest routes such a request — or any
//! request whose `Origin` is not the listener's own, or marked
//! `Sec-Fetch-Site: cross-site` / `same-site` — is refused (`415` for the
//! content type, `403` for the origin) before authentication and counted in
//! `browser_requests_refused`. Shippers send `application/json` or
//! `application/x-ndjson` and no `Origin`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::{header, HeaderMap, StatusCode};
use serde::Deserialize;
use sluice_core::component::BuildContext;
use sluice_core::config::ConfigError;
use sluice_core::Identity;
use sluice_parsers::http_auth;

use crate::secret::{ct_eq, TokenSource};

/// `auth`: whether requests need a token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMode {
    /// Every request needs one of `tokens` (default).
    #[default]
    Token,
    /// No authentication (behind a proxy that authenticates).
    None,
}

/// `[…sources.<id>.tokens.<name>]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// The token itself (prefer `token_env` or `token_file`).
    #[serde(default)]
    token: Option<String>,
    /// An environment variable holding the token.
    #[serde(default)]
    token_env: Option<String>,
    /// A file holding the token (relative paths under the node's data
    /// directory; created with a random token when missing).
    #[serde(default)]
    token_file: Option<std::path::PathBuf>,
    /// The group of the events sent with this token.
    group: String,
    /// Their subgroup.
    #[serde(default)]
    subgroup: String,
    /// Their host.
    #[serde(default)]
    host: String,
}

/// A resolved ingest token.
pub struct IngestToken {
    secret: String,
    /// The identity of every event sent with it.
    pub identity: Arc<Identity>,
}

/// Resolves (creating missing token files unless `cx.dry_run`) the tokens.
pub fn resolve(
    mode: AuthMode,
    tokens: &BTreeMap<String, TokenConfig>,
    cx: &BuildContext,
) -> Result<Vec<IngestToken>, ConfigError> {
    match mode {
        AuthMode::Token if tokens.is_empty() => {
            return Err(cx.error(
                "tokens",
                "at least one token is needed: senders must authenticate (or auth = \"none\" behind a proxy that does)",
            ))
        }
        AuthMode::None if !tokens.is_empty() => {
            return Err(cx.error("tokens", "auth = \"none\" takes no tokens"));
        }
        _ => {}
    }
    let mut out: Vec<IngestToken> = Vec::new();
    for (name, t) in tokens {
        let src =
            TokenSource { token: t.token.clone(), token_env: t.token_env.clone(), token_file: t.token_file.clone() };
        let secret = src
            .resolve_or_create(&cx.data_dir, cx.dry_run)
            .map_err(|(k, m)| cx.error(&format!("tokens.{name}.{k}"), m))?;
        if t.group.is_empty() {
            return Err(cx.error(&format!("tokens.{name}.group"), "must not be empty"));
        }
        if out.iter().any(|o| o.secret == secret) {
            return Err(cx.error(&format!("tokens.{name}"), "the same secret is configured for two tokens"));
        }
        out.push(IngestToken { secret, identity: Arc::new(Identity::new(&t.group, &t.subgroup, &t.host)) });
    }
    Ok(out)
}

/// The token whose secret the request's `Authorization` header presents.
/// Every candidate is compared with every token, so the time taken does not
/// tell which token (or which part of one) matched.
pub fn authenticate<'t>(headers: &HeaderMap, tokens: &'t [IngestToken]) -> Option<&'t IngestToken> {
    let presented = headers.get(header::AUTHORIZATION).and_then(|v| http_auth::presented(v.as_bytes()))?;
    let mut found = None;
    for t in tokens {
        for s in &presented.secrets {
            if ct_eq(s, t.secret.as_bytes()) && found.is_none() {
                found = Some(t);
            }
        }
    }
    found
}

/// The token whose secret is `secret` (compared in constant time with every
/// token, as [`authenticate`] does) — for protocols with their own header
/// form, such as Splunk HEC's `Authorization: Splunk <token>`.
pub fn match_secret<'t>(secret: &[u8], tokens: &'t [IngestToken]) -> Option<&'t IngestToken> {
    let mut found = None;
    for t in tokens {
        if ct_eq(secret, t.secret.as_bytes()) && found.is_none() {
            found = Some(t);
        }
    }
    found
}

/// Why a request on an ingest route looks like one a web page made, if it does.
pub fn browser_refusal(headers: &HeaderMap) -> Option<(StatusCode, String)> {
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let essence = ct.to_str().unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        if matches!(essence.as_str(), "text/plain" | "application/x-www-form-urlencoded" | "multipart/form-data") {
            return Some((
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "Content-Type [{essence}] is refused on ingest routes (a web page can send it without the \
                     visitor's consent): send application/x-ndjson or application/json"
                ),
            ));
        }
    }
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()).unwrap_or("");
    if site.eq_ignore_ascii_case("cross-site") || site.eq_ignore_ascii_case("same-site") {
        return Some((StatusCode::FORBIDDEN, format!("a {site} browser request is refused on ingest routes")));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("?");
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        let own = origin.split_once("://").is_some_and(|(_, authority)| !host.is_empty() && authority == host);
        if !own {
            return Some((
                StatusCode::FORBIDDEN,
                format!("a request from origin {origin} is refused on ingest routes"),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(h: &[(&'static str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in h {
            m.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        m
    }

    #[test]
    fn simple_requests_and_foreign_origins_are_refused() {
        for ct in [
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "Multipart/Form-Data; boundary=x",
        ] {
            let r = browser_refusal(&headers(&[("content-type", ct)]));
            assert_eq!(r.map(|(s, _)| s), Some(StatusCode::UNSUPPORTED_MEDIA_TYPE), "{ct}");
        }
        for ok in
            ["application/json", "application/x-ndjson", "application/vnd.elasticsearch+x-ndjson; compatible-with=8"]
        {
            assert_eq!(browser_refusal(&headers(&[("content-type", ok)])), None, "{ok}");
        }
        assert_eq!(browser_refusal(&headers(&[])), None);
        let r = browser_refusal(&headers(&[("origin", "https://evil.example"), ("host", "127.0.0.1:8080")]));
        assert_eq!(r.unwrap().0, StatusCode::FORBIDDEN);
        let r = browser_refusal(&headers(&[("origin", "null"), ("host", "127.0.0.1:8080")]));
        assert_eq!(r.unwrap().0, StatusCode::FORBIDDEN);
        assert_eq!(browser_refusal(&headers(&[("origin", "http://127.0.0.1:8080"), ("host", "127.0.0.1:8080")])), None);
        let r = browser_refusal(&headers(&[("sec-fetch-site", "cross-site")]));
        assert_eq!(r.unwrap().0, StatusCode::FORBIDDEN);
        assert_eq!(browser_refusal(&headers(&[("sec-fetch-site", "same-origin")])), None);
    }
}
