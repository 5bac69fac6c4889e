//! Who is calling: an [`Authenticator`] turns a request into a
//! [`Principal`], and handlers take the [`Authenticated`] extractor, so they
//! never see how. There are [`StaticTokens`] (`[api.tokens.<name>]` in the
//! config, sent as `Authorization: Bearer <token>`) and, on nodes with
//! `[auth]`, [`crate::session::UserAuth`]: user sessions (cookie + CSRF header
//! for state-changing requests), user API tokens, then the static tokens.
//!
//! No authenticator means no access: with no tokens configured every search
//! endpoint answers `401`.

use async_trait::async_trait;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use sluice_query::{Principal, SourcePattern};

use crate::error::ApiError;
use crate::ApiState;

/// Why a request is not authenticated (all answer `401 unauthorized`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header.
    #[error("missing credentials: send Authorization: Bearer <token>")]
    Missing,
    /// An `Authorization` header that is not `Bearer <token>`.
    #[error("unsupported Authorization scheme: send Authorization: Bearer <token>")]
    Malformed,
    /// A token nobody issued.
    #[error("invalid token")]
    Invalid,
    /// The node has no tokens at all.
    #[error("no API tokens are configured on this node ([api.tokens])")]
    NotConfigured,
    /// An unknown, expired or half-finished (second factor pending) session.
    #[error("not logged in (or the session expired)")]
    Session,
    /// An expired token, or one of a disabled user.
    #[error("token expired or its user is disabled")]
    Expired,
    /// A state-changing request with a session cookie lacks a valid `X-CSRF-Token` (403).
    #[error("missing or invalid X-CSRF-Token header")]
    Csrf,
    /// The session may only enrol TOTP (403).
    #[error("enrol two-factor authentication first (POST /api/v1/me/totp/enroll)")]
    EnrollmentRequired,
    /// Authenticated, but not allowed (403): a token's scope, a static token on a user endpoint.
    #[error("{0}")]
    Forbidden(String),
    /// The user database failed (500, detail logged).
    #[error("{0}")]
    Internal(String),
}

/// Authenticates requests.
#[async_trait]
pub trait Authenticator: Send + Sync {
    /// The principal the request runs for, from its headers alone. Implementations
    /// that use cookies treat this as a state-changing request (CSRF token required).
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthError>;

    /// The principal of a whole request (method, path, headers, peer address);
    /// what the [`Authenticated`] extractor calls. Defaults to [`Self::authenticate`].
    async fn authenticate_parts(&self, parts: &Parts) -> Result<Principal, AuthError> {
        self.authenticate(&parts.headers).await
    }
}

/// The bearer token of an `Authorization` header.
pub fn bearer(headers: &HeaderMap) -> Result<&str, AuthError> {
    let value = headers.get(header::AUTHORIZATION).ok_or(AuthError::Missing)?;
    let value = value.to_str().map_err(|_| AuthError::Malformed)?.trim();
    let (scheme, token) = value.split_once(' ').ok_or(AuthError::Malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(AuthError::Malformed);
    }
    Ok(token)
}

/// One static token.
struct StaticToken {
    secret: Vec<u8>,
    principal: Principal,
}

/// Static bearer tokens, each mapped to a principal.
pub struct StaticTokens {
    tokens: Vec<StaticToken>,
}

impl StaticTokens {
    /// Tokens as `(name, secret, allowed)`; the name becomes the principal's.
    pub fn new(tokens: impl IntoIterator<Item = (String, String, Vec<SourcePattern>)>) -> Self {
        Self {
            tokens: tokens
                .into_iter()
                .map(|(name, secret, allowed)| StaticToken {
                    secret: secret.into_bytes(),
                    principal: Principal::new(name, allowed),
                })
                .collect(),
        }
    }

    /// No tokens: every request is refused.
    pub fn none() -> Self {
        Self { tokens: Vec::new() }
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

#[async_trait]
impl Authenticator for StaticTokens {
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthError> {
        if self.tokens.is_empty() {
            return Err(AuthError::NotConfigured);
        }
        let presented = bearer(headers)?.as_bytes();
        // Every token is compared, each in constant time, so the answer's
        // timing says nothing about which token or how much of it matched.
        let mut found = None;
        for t in &self.tokens {
            if ct_eq(presented, &t.secret) {
                found = Some(&t.principal);
            }
        }
        found.cloned().ok_or(AuthError::Invalid)
    }
}

/// Constant-time equality (one implementation for the tree).
pub(crate) use sluice_core::secret::ct_eq;

/// Access to the node's counters (`/_node/stats`, `/metrics`): anyone when
/// [`ApiState::metrics_auth`] is off (`[api] metrics_auth = "none"`), else a
/// caller the API authenticates (any valid token or session), `401` otherwise.
#[derive(Debug, Clone, Copy)]
pub struct MetricsAccess;

impl FromRequestParts<ApiState> for MetricsAccess {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, Self::Rejection> {
        if state.metrics_auth {
            Authenticated::from_request_parts(parts, state).await?;
        }
        Ok(Self)
    }
}

/// The caller's principal; rejects with `401` (see [`ApiState::auth`]).
#[derive(Debug, Clone)]
pub struct Authenticated(pub Principal);

impl FromRequestParts<ApiState> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, Self::Rejection> {
        match state.auth.authenticate_parts(parts).await {
            Ok(p) => Ok(Self(p)),
            Err(e) => {
                tracing::debug!(error = %e, path = %parts.uri.path(), "api: authentication failed");
                Err(ApiError::from(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        h
    }

    #[tokio::test]
    async fn static_tokens_map_to_principals() {
        let a = StaticTokens::new([
            ("admin".to_string(), "0123456789abcdef".to_string(), vec![SourcePattern::all()]),
            ("acme".to_string(), "acme-token-000000".to_string(), vec![SourcePattern::new("acme", "*", "*")]),
        ]);
        let p = a.authenticate(&headers("Bearer acme-token-000000")).await.unwrap();
        assert_eq!(p, Principal::new("acme", vec![SourcePattern::new("acme", "*", "*")]));
        assert_eq!(a.authenticate(&headers("bearer  0123456789abcdef ")).await.unwrap().name, "admin");
        assert_eq!(a.authenticate(&headers("Bearer 0123456789abcdeX")).await, Err(AuthError::Invalid));
        assert_eq!(a.authenticate(&headers("Bearer 0123456789abcde")).await, Err(AuthError::Invalid));
        assert_eq!(a.authenticate(&headers("Basic YTpi")).await, Err(AuthError::Malformed));
        assert_eq!(a.authenticate(&HeaderMap::new()).await, Err(AuthError::Missing));
        let none = StaticTokens::none();
        assert_eq!(none.authenticate(&headers("Bearer x")).await, Err(AuthError::NotConfigured));
    }

    #[test]
    fn constant_time_equality() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"abcd"));
        assert!(!ct_eq(b"", b"a"));
        assert!(ct_eq(b"", b""));
    }
}
