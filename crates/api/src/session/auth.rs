//! Who a request is and what it may do: [`UserAuth`] resolves a bearer
//! token (user API token or static `[api.tokens]` token) or the session
//! cookie (with the CSRF check on state-changing methods) and is the
//! [`Authenticator`] of nodes with `[auth]`; the extractors of the user
//! endpoints ([`Ctx`] with the token-scope and TOTP-enrolment checks,
//! [`EnrollCtx`], [`UsersOf`] for login, [`Client`]); the session and CSRF
//! cookies; and how users-service and login errors map to API errors.

use super::{blocking, client, cookie, safe_method, users_off, CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE};
use crate::auth::{bearer, ct_eq, AuthError, Authenticator, StaticTokens};
use crate::error::ApiError;
use crate::ApiState;
use async_trait::async_trait;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;
use sluice_query::Principal;
use sluice_users::login::csrf_token;
use sluice_users::{Actor, AuthFailure, Caller, LoginError, Stage, TokenScope, UserType, Users, UsersError, Via};
use std::sync::Arc;

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

pub(super) fn secure(users: &Users, https: bool) -> bool {
    match users.config().cookie_secure.as_str() {
        "always" => true,
        "never" => false,
        _ => https,
    }
}

/// `Set-Cookie` values for a new session.
pub(super) fn session_cookies(session_id: &str, csrf: &str, secure: bool) -> [HeaderValue; 2] {
    let s = if secure { "; Secure" } else { "" };
    [
        HeaderValue::from_str(&format!("{SESSION_COOKIE}={session_id}; HttpOnly; SameSite=Strict; Path=/{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
        HeaderValue::from_str(&format!("{CSRF_COOKIE}={csrf}; SameSite=Strict; Path=/{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
    ]
}

pub(super) fn clear_cookies(secure: bool) -> [HeaderValue; 2] {
    let s = if secure { "; Secure" } else { "" };
    [
        HeaderValue::from_str(&format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
        HeaderValue::from_str(&format!("{CSRF_COOKIE}=; SameSite=Strict; Path=/; Max-Age=0{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
    ]
}

pub(super) fn with_cookies(mut resp: Response, cookies: [HeaderValue; 2]) -> Response {
    for c in cookies {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    resp
}

/// Maps a users-service error to the API's.
impl From<UsersError> for ApiError {
    fn from(e: UsersError) -> Self {
        match e {
            UsersError::NotFound(m) => Self::NotFound(m),
            UsersError::Conflict(m) => Self::Conflict(m),
            UsersError::Invalid { field: Some(field), message } => Self::InvalidField { field, message },
            UsersError::Invalid { field: None, message } => Self::InvalidRequest(message),
            UsersError::Forbidden(m) => Self::Forbidden(m),
            UsersError::Query { field, message, position } => {
                Self::QueryParse { message: format!("{field}: {message}"), position }
            }
            UsersError::BadCredentials(m) if m.contains("code") => Self::InvalidCode,
            UsersError::BadCredentials(_) => Self::InvalidCredentials,
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<LoginError> for ApiError {
    fn from(e: LoginError) -> Self {
        match e {
            LoginError::InvalidCredentials => Self::InvalidCredentials,
            LoginError::InvalidCode => Self::InvalidCode,
            LoginError::NoPendingLogin => Self::Unauthorized(AuthError::Session),
            LoginError::Locked { retry_after } => Self::Locked { retry_after },
            LoginError::RateLimited { retry_after } => Self::RateLimited { retry_after },
            LoginError::Internal(m) => Self::Internal(m),
        }
    }
}
