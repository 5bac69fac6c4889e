//! Who a request is: [`UserAuth`] resolves a bearer token (user API token
//! or static `[api.tokens]` token) or the session cookie (with the CSRF check
//! on state-changing methods), and is the [`Authenticator`] of nodes with
//! `[auth]`.

use std::sync::Arc;

use async_trait::async_trait;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use sluice_query::Principal;
use sluice_users::login::csrf_token;
use sluice_users::{AuthFailure, Caller, Stage, Users, Via};

use super::{blocking, cookie, safe_method, CSRF_HEADER, SESSION_COOKIE};
use crate::auth::{bearer, ct_eq, AuthError, Authenticator, StaticTokens};

/// Who a request is.
#[derive(Debug, Clone)]
pub enum Resolved {
    /// A user (session or user token), with the session id when by cookie.
    User(Caller, Option<String>),
    /// A static `[api.tokens]` token.
    Static(Principal),
}

/// Sessions, user tokens and static tokens.
pub struct UserAuth {
    users: Arc<Users>,
    statics: Arc<StaticTokens>,
}

impl UserAuth {
    /// Over `users`, falling back to `statics` for other bearer tokens.
    pub fn new(users: Arc<Users>, statics: Arc<StaticTokens>) -> Self {
        Self { users, statics }
    }

    /// Resolves a request: bearer token first, else the session cookie
    /// (with the CSRF check when `state_changing`).
    pub async fn resolve(&self, headers: &HeaderMap, state_changing: bool) -> Result<Resolved, AuthError> {
        if headers.contains_key(header::AUTHORIZATION) {
            let token = bearer(headers)?.to_string();
            if token.starts_with("slt_") {
                let r = blocking(&self.users, move |u| u.token(&token))
                    .await
                    .map_err(|e| AuthError::Internal(e.to_string()))?;
                return match r {
                    Ok(c) => Ok(Resolved::User(c, None)),
                    Err(AuthFailure::Expired | AuthFailure::Disabled) => Err(AuthError::Expired),
                    Err(AuthFailure::Internal(e)) => Err(AuthError::Internal(e)),
                    Err(_) => Err(AuthError::Invalid),
                };
            }
            return match self.statics.authenticate(headers).await {
                Err(AuthError::NotConfigured) => Err(AuthError::Invalid),
                other => other.map(Resolved::Static),
            };
        }
        let Some(sid) = cookie(headers, SESSION_COOKIE).map(str::to_string) else { return Err(AuthError::Missing) };
        let id = sid.clone();
        let r = blocking(&self.users, move |u| u.session(&id)).await.map_err(|e| AuthError::Internal(e.to_string()))?;
        let caller = match r {
            Ok(c) => c,
            Err(AuthFailure::Internal(e)) => return Err(AuthError::Internal(e)),
            Err(_) => return Err(AuthError::Session),
        };
        if state_changing {
            let presented = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
            if !ct_eq(presented.as_bytes(), csrf_token(&sid).as_bytes()) {
                return Err(AuthError::Csrf);
            }
        }
        Ok(Resolved::User(caller, Some(sid)))
    }

    fn principal(r: Resolved) -> Result<Principal, AuthError> {
        match r {
            Resolved::User(c, _) if matches!(c.via, Via::Session { stage: Stage::Enroll, .. }) => {
                Err(AuthError::EnrollmentRequired)
            }
            Resolved::User(c, _) => Ok(c.principal()),
            Resolved::Static(p) => Ok(p),
        }
    }
}

#[async_trait]
impl Authenticator for UserAuth {
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthError> {
        Self::principal(self.resolve(headers, true).await?)
    }

    async fn authenticate_parts(&self, parts: &Parts) -> Result<Principal, AuthError> {
        // The search endpoints are read-only for every token scope.
        Self::principal(self.resolve(&parts.headers, !safe_method(&parts.method)).await?)
    }
}
