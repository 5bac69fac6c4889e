//! Users on the API: [`UserAuth`] (the [`Authenticator`](crate::auth::Authenticator) of nodes with
//! `[auth]`), the [`Ctx`] extractor of the user endpoints, cookies and CSRF,
//! and the login / second factor / logout / `me` endpoints
//! (`docs/specs/ui-api.md` §1.2, §2, §3).
//!
//! A request authenticates with, in order: `Authorization: Bearer` — a user
//! API token (`slt_…`) or a static `[api.tokens]` token — else the
//! `sluice_session` cookie. With the cookie, every method but `GET`/`HEAD`/
//! `OPTIONS` must carry `X-CSRF-Token` equal to the session's token (derived
//! from the session id, also in the readable `sluice_csrf` cookie): a
//! cross-site page can make the browser send the cookie but cannot read it.
//! Cookies are `HttpOnly` (the session), `SameSite=Strict` and `Path=/`, and
//! `Secure` when `[auth] cookie_secure` says so.
//!
//! `sluice-users` is synchronous (SQLite, argon2, LDAP): every call runs on a
//! blocking thread ([`blocking`]).
//!
//! Two files under `session/`: `auth.rs` (who a request is: resolving,
//! extractors, cookies, error mapping) and `routes.rs` (the login and `me`
//! endpoints); the public items are re-exported here.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Method};
use sluice_users::Users;

use crate::error::ApiError;

mod auth;
mod routes;

pub use auth::*;
pub use routes::*;

/// The session cookie.
pub const SESSION_COOKIE: &str = "sluice_session";
/// The readable CSRF cookie.
pub const CSRF_COOKIE: &str = "sluice_csrf";
/// The CSRF request header.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// Runs a users-service call on a blocking thread.
pub async fn blocking<T: Send + 'static>(
    users: &Arc<Users>,
    f: impl FnOnce(&Users) -> T + Send + 'static,
) -> Result<T, ApiError> {
    let u = Arc::clone(users);
    tokio::task::spawn_blocking(move || f(&u)).await.map_err(|e| ApiError::Internal(format!("users task: {e}")))
}

/// The value of cookie `name`.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

fn safe_method(m: &Method) -> bool {
    matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Client address (the TCP peer) and user agent, for rate limits and audit.
pub fn client(parts: &Parts) -> (Option<String>, Option<String>) {
    let ip = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip().to_string());
    let ua = parts.headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).map(|s| s.chars().take(512).collect());
    (ip, ua)
}

fn users_off() -> ApiError {
    ApiError::NotFound("user accounts are not enabled on this node (add an [auth] section to the config)".into())
}

/// A JSON request body: `Content-Type: application/json` required (a
/// cross-site form cannot send it), unknown keys named in the error.
pub fn json_body<T: serde::de::DeserializeOwned>(headers: &HeaderMap, body: &[u8]) -> Result<T, ApiError> {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !ct.trim_start().to_ascii_lowercase().starts_with("application/json") {
        return Err(ApiError::InvalidRequest("send the body as Content-Type: application/json".into()));
    }
    let body = if body.iter().all(u8::is_ascii_whitespace) { &b"{}"[..] } else { body };
    serde_json::from_slice(body).map_err(|e| ApiError::InvalidRequest(format!("invalid request body: {e}")))
}
