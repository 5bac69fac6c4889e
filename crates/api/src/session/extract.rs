//! The extractors of the user endpoints: [`Ctx`] (an authenticated user,
//! with the token-scope and TOTP-enrolment checks), [`EnrollCtx`],
//! [`UsersOf`] (no caller, for login) and [`Client`] (where a request came
//! from).

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use sluice_users::{Actor, Caller, Stage, TokenScope, UserType, Users, Via};

use super::{blocking, client, safe_method, users_off, Resolved, UserAuth};
use crate::auth::StaticTokens;
use crate::error::ApiError;
use crate::ApiState;

/// A user on a user endpoint, with where the request came from.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The user.
    pub caller: Caller,
    /// The raw session id, when by cookie.
    pub session_id: Option<String>,
    /// Client address.
    pub ip: Option<String>,
    /// Client user agent.
    pub user_agent: Option<String>,
    /// The users service.
    pub users: Arc<Users>,
}

impl Ctx {
    /// The actor of audit records.
    pub fn actor(&self) -> Actor {
        self.caller.actor(self.ip.clone(), self.user_agent.clone())
    }

    /// `403` unless the caller's type is at least `t`.
    pub fn require(&self, t: UserType) -> Result<(), ApiError> {
        if self.caller.user_type >= t {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!("this needs a user of type {} or above", t.as_str())))
        }
    }

    /// Whether the caller is an admin.
    pub fn is_admin(&self) -> bool {
        self.caller.user_type == UserType::Admin
    }

    /// Runs a users-service call on a blocking thread.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce(&Users) -> T + Send + 'static) -> Result<T, ApiError> {
        blocking(&self.users, f).await
    }
}

/// Paths a `search`-scoped token may `POST` to.
fn read_only_post(path: &str) -> bool {
    path == "/api/v1/search"
        || path == "/api/v1/aggregate"
        || (path.starts_with("/api/v1/dashboards/") && path.ends_with("/data"))
}

async fn extract(parts: &Parts, state: &ApiState, allow_enroll: bool) -> Result<Ctx, ApiError> {
    let users = state.users.clone().ok_or_else(users_off)?;
    let auth = UserAuth::new(Arc::clone(&users), Arc::new(StaticTokens::none()));
    let auth = match &state.user_auth {
        Some(a) => a.clone(),
        None => Arc::new(auth),
    };
    let state_changing = !safe_method(&parts.method);
    let (caller, sid) = match auth.resolve(&parts.headers, state_changing).await {
        Ok(Resolved::User(c, sid)) => (c, sid),
        Ok(Resolved::Static(_)) => {
            return Err(ApiError::Forbidden("static [api.tokens] tokens may use the search endpoints only".into()))
        }
        Err(e) => {
            tracing::debug!(error = %e, path = %parts.uri.path(), "api: authentication failed");
            return Err(ApiError::from(e));
        }
    };
    if !allow_enroll && matches!(caller.via, Via::Session { stage: Stage::Enroll, .. }) {
        return Err(ApiError::EnrollmentRequired);
    }
    if let Via::Token { scope: TokenScope::Search, .. } = caller.via {
        if state_changing && !read_only_post(parts.uri.path()) {
            return Err(ApiError::Forbidden("this token has scope search (read-only)".into()));
        }
    }
    let (ip, user_agent) = client(parts);
    Ok(Ctx { caller, session_id: sid, ip, user_agent, users })
}

impl FromRequestParts<ApiState> for Ctx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, Self::Rejection> {
        extract(parts, state, false).await
    }
}

/// [`Ctx`] that also accepts a session that may only enrol TOTP.
#[derive(Debug, Clone)]
pub struct EnrollCtx(pub Ctx);

impl FromRequestParts<ApiState> for EnrollCtx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, Self::Rejection> {
        extract(parts, state, true).await.map(Self)
    }
}

/// The users service of the node, for endpoints without a caller (login).
pub struct UsersOf(pub Arc<Users>);

impl FromRequestParts<ApiState> for UsersOf {
    type Rejection = ApiError;

    async fn from_request_parts(_parts: &mut Parts, state: &ApiState) -> Result<Self, Self::Rejection> {
        state.users.clone().map(Self).ok_or_else(users_off)
    }
}

/// Where a request came from.
pub struct Client {
    /// Address.
    pub ip: Option<String>,
    /// User agent.
    pub user_agent: Option<String>,
    /// Whether it came over TLS (`X-Forwarded-Proto: https`).
    pub https: bool,
    /// Request headers.
    pub headers: HeaderMap,
}

impl<S: Send + Sync> FromRequestParts<S> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let (ip, user_agent) = client(parts);
        let https = parts
            .headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
        Ok(Self { ip, user_agent, https, headers: parts.headers.clone() })
    }
}
