//! Users on the API: [`UserAuth`] (the [`Authenticator`] of nodes with
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

use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use sluice_query::Principal;
use sluice_query::SourcePattern;
use sluice_users::login::csrf_token;
use sluice_users::model::{TotpStatus, UserSource};
use sluice_users::{
    Actor, AuthFailure, Caller, Factor, LoginAttempt, LoginError, Stage, TokenScope, UserType, Users, UsersError, Via,
};

use crate::auth::{bearer, ct_eq, AuthError, Authenticator, StaticTokens};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::ApiState;

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

fn users_off() -> ApiError {
    ApiError::NotFound("user accounts are not enabled on this node (add an [auth] section to the config)".into())
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

fn secure(users: &Users, https: bool) -> bool {
    match users.config().cookie_secure.as_str() {
        "always" => true,
        "never" => false,
        _ => https,
    }
}

/// `Set-Cookie` values for a new session.
fn session_cookies(session_id: &str, csrf: &str, secure: bool) -> [HeaderValue; 2] {
    let s = if secure { "; Secure" } else { "" };
    [
        HeaderValue::from_str(&format!("{SESSION_COOKIE}={session_id}; HttpOnly; SameSite=Strict; Path=/{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
        HeaderValue::from_str(&format!("{CSRF_COOKIE}={csrf}; SameSite=Strict; Path=/{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
    ]
}

fn clear_cookies(secure: bool) -> [HeaderValue; 2] {
    let s = if secure { "; Secure" } else { "" };
    [
        HeaderValue::from_str(&format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
        HeaderValue::from_str(&format!("{CSRF_COOKIE}=; SameSite=Strict; Path=/; Max-Age=0{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
    ]
}

fn with_cookies(mut resp: Response, cookies: [HeaderValue; 2]) -> Response {
    for c in cookies {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    resp
}

/// `GET /api/v1/auth/config` response: what the login page offers.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuthConfigResponse {
    /// `password`, and `ldap` when LDAP is configured; empty without `[auth]`.
    pub methods: Vec<&'static str>,
    /// Whether TOTP exists (with `[auth]`).
    pub totp: bool,
    /// The node's version.
    pub version: &'static str,
}

/// `POST /api/v1/me/totp/enroll` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct TotpEnrolment {
    /// The base32 secret.
    pub secret: String,
    /// `otpauth://totp/…` for authenticator apps.
    pub otpauth_uri: String,
    /// The URI as a QR code, an SVG document.
    pub qr_svg: String,
}

/// Recovery codes, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecoveryCodes {
    /// Each usable once instead of a TOTP code.
    pub recovery_codes: Vec<String>,
}

/// `GET /api/v1/me`: the caller.
#[derive(Debug, Serialize, ToSchema)]
pub struct Me {
    /// Who.
    pub user: MeUser,
    /// What their type allows (`logs:read`, `operations:read`, `users:manage`, `settings:manage`, `audit:read`).
    pub permissions: Vec<&'static str>,
    /// The sources they may read (their and their groups' assignments).
    pub allowed: Vec<SourcePattern>,
    /// `session` or `token`.
    pub auth: &'static str,
    /// The session, when authenticated by one.
    #[schema(required = true)]
    pub session: Option<SessionInfo>,
    /// The token's scope, when authenticated by an API token.
    #[schema(required = true)]
    pub token_scope: Option<TokenScope>,
    /// The CSRF token to send as `X-CSRF-Token` (sessions only).
    #[schema(required = true)]
    pub csrf_token: Option<String>,
}

/// The `user` of [`Me`].
#[derive(Debug, Serialize, ToSchema)]
pub struct MeUser {
    /// Lower-case login name.
    pub username: String,
    /// Free text.
    pub display_name: String,
    /// Type.
    #[serde(rename = "type")]
    pub user_type: UserType,
    /// Local or LDAP.
    pub source: UserSource,
    /// Groups.
    pub groups: Vec<String>,
    /// Two-factor state.
    pub totp: TotpStatus,
    /// Still the generated password printed at the first start: the UI asks
    /// to replace it.
    pub password_one_time: bool,
}

/// The `session` of [`Me`].
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionInfo {
    /// When it was created.
    pub created_at: String,
    /// When it ends at the latest.
    pub expires_at: String,
    /// When it ends without activity.
    pub idle_expires_at: String,
    /// `full`, or `totp_enrollment` (only TOTP enrolment allowed).
    pub stage: &'static str,
}

/// `POST /api/v1/auth/login` and `POST /api/v1/auth/totp` responses, by `status`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum LoginResponse {
    /// Logged in.
    Authenticated {
        /// The CSRF token (also in the `sluice_csrf` cookie).
        csrf_token: String,
        /// The caller.
        me: Me,
    },
    /// Password accepted; send the second factor to `POST /api/v1/auth/totp` within `expires_in` seconds.
    TotpRequired {
        /// Seconds.
        expires_in: u64,
    },
    /// Logged in, but the session may only enrol TOTP (`POST /api/v1/me/totp/enroll`).
    TotpEnrollmentRequired {
        /// The CSRF token.
        csrf_token: String,
        /// The caller.
        me: Me,
    },
}

/// The `GET /api/v1/me` document.
pub fn me_json(users: &Users, caller: &Caller, session_id: Option<&str>) -> Result<Me, ApiError> {
    let user = users.me(caller)?;
    let (auth, session, token_scope) = match &caller.via {
        Via::Session { stage, created_at, expires_at, idle_expires_at, .. } => (
            "session",
            Some(SessionInfo {
                created_at: sluice_users::clock::rfc3339(*created_at),
                expires_at: sluice_users::clock::rfc3339(*expires_at),
                idle_expires_at: sluice_users::clock::rfc3339(*idle_expires_at),
                stage: if *stage == Stage::Enroll { "totp_enrollment" } else { "full" },
            }),
            None,
        ),
        Via::Token { scope, .. } => ("token", None, Some(*scope)),
    };
    Ok(Me {
        user: MeUser {
            username: user.username,
            display_name: user.display_name,
            user_type: user.user_type,
            source: user.source,
            groups: user.groups,
            totp: user.totp,
            password_one_time: user.password_one_time,
        },
        permissions: caller.user_type.permissions(),
        allowed: caller.allowed.clone(),
        auth,
        session,
        token_scope,
        csrf_token: session_id.map(csrf_token),
    })
}

/// Login methods (no authentication).
///
/// `GET /api/v1/auth/config`.
#[utoipa::path(
    get,
    path = "/api/v1/auth/config",
    operation_id = "authConfig",
    tag = "auth",
    responses(
        (status = 200, description = "Login methods", body = AuthConfigResponse)
    )
)]
pub async fn auth_config(State(s): State<ApiState>) -> Result<Json<AuthConfigResponse>, ApiError> {
    let version = env!("CARGO_PKG_VERSION");
    let Some(users) = s.users.clone() else {
        return Ok(Json(AuthConfigResponse { methods: Vec::new(), totp: false, version }));
    };
    let ldap = blocking(&users, |u| u.ldap_settings().map(|(_, s)| s.is_some())).await??;
    let mut methods = vec!["password"];
    if ldap {
        methods.push("ldap");
    }
    Ok(Json(AuthConfigResponse { methods, totp: true, version }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    username: String,
    password: String,
}

async fn login_response(users: &Arc<Users>, o: sluice_users::LoginOutcome, https: bool) -> Result<Response, ApiError> {
    let secure = secure(users, https);
    let cookies = session_cookies(&o.session_id, &o.csrf_token, secure);
    let body = match o.stage {
        Stage::Totp => LoginResponse::TotpRequired { expires_in: o.expires_in },
        stage => {
            let sid = o.session_id.clone();
            let me = blocking(users, move |u| -> Result<Me, ApiError> {
                let caller = u.session(&sid).map_err(|e| ApiError::Internal(e.to_string()))?;
                me_json(u, &caller, Some(&sid))
            })
            .await??;
            let csrf_token = o.csrf_token;
            if stage == Stage::Enroll {
                LoginResponse::TotpEnrollmentRequired { csrf_token, me }
            } else {
                LoginResponse::Authenticated { csrf_token, me }
            }
        }
    };
    Ok(with_cookies(Json(body).into_response(), cookies))
}

/// Log in with user name and password; sets the session and CSRF cookies.
///
/// `POST /api/v1/auth/login`.
#[utoipa::path(
    post,
    path = "/api/v1/auth/login",
    operation_id = "login",
    tag = "auth",
    request_body = LoginBody,
    responses(
        (status = 200, description = "By `status`; sets the session cookies", body = LoginResponse)
    )
)]
pub async fn login(UsersOf(users): UsersOf, c: Client, body: Bytes) -> Result<Response, ApiError> {
    let b: LoginBody = json_body(&c.headers, &body)?;
    let attempt = LoginAttempt { username: b.username, password: b.password, ip: c.ip, user_agent: c.user_agent };
    let o = blocking(&users, move |u| u.login(&attempt)).await??;
    login_response(&users, o, c.https).await
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct TotpBody {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    recovery_code: Option<String>,
}

/// Second factor for a pending login (TOTP or recovery code).
///
/// `POST /api/v1/auth/totp`.
#[utoipa::path(
    post,
    path = "/api/v1/auth/totp",
    operation_id = "loginTotp",
    tag = "auth",
    request_body = TotpBody,
    responses(
        (status = 200, description = "As for `POST /api/v1/auth/login`", body = LoginResponse)
    )
)]
pub async fn login_totp(UsersOf(users): UsersOf, c: Client, body: Bytes) -> Result<Response, ApiError> {
    let b: TotpBody = json_body(&c.headers, &body)?;
    let factor = match (b.code, b.recovery_code) {
        (Some(code), None) => Factor::Code(code),
        (None, Some(r)) => Factor::Recovery(r),
        _ => return Err(ApiError::InvalidRequest("send exactly one of `code` and `recovery_code`".into())),
    };
    let Some(pending) = cookie(&c.headers, SESSION_COOKIE).map(str::to_string) else {
        return Err(LoginError::NoPendingLogin.into());
    };
    let (ip, ua) = (c.ip.clone(), c.user_agent.clone());
    let o = blocking(&users, move |u| u.second_factor(&pending, &factor, ip, ua)).await??;
    login_response(&users, o, c.https).await
}

/// End the session and clear the cookies.
///
/// `POST /api/v1/auth/logout`: needs the CSRF token when a session is sent.
#[utoipa::path(
    post,
    path = "/api/v1/auth/logout",
    operation_id = "logout",
    tag = "auth",
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn logout(State(s): State<ApiState>, c: Client) -> Result<Response, ApiError> {
    let users = s.users.clone().ok_or_else(users_off)?;
    let secure = secure(&users, c.https);
    if let Some(sid) = cookie(&c.headers, SESSION_COOKIE).map(str::to_string) {
        let presented = c.headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
        if !ct_eq(presented.as_bytes(), csrf_token(&sid).as_bytes()) {
            return Err(ApiError::Csrf);
        }
        let (ip, ua) = (c.ip, c.user_agent);
        blocking(&users, move |u| u.logout(&sid, ip, ua)).await??;
    }
    Ok(with_cookies(StatusCode::NO_CONTENT.into_response(), clear_cookies(secure)))
}

/// The caller: user, permissions, effective source patterns, session, CSRF token.
///
/// `GET /api/v1/me`.
#[utoipa::path(
    get,
    path = "/api/v1/me",
    operation_id = "me",
    tag = "me",
    security(("session" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "The caller", body = Me)
    )
)]
pub async fn me(EnrollCtx(ctx): EnrollCtx) -> Result<Json<Me>, ApiError> {
    let (caller, sid) = (ctx.caller.clone(), ctx.session_id.clone());
    ctx.run(move |u| me_json(u, &caller, sid.as_deref())).await?.map(Json)
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PasswordBody {
    current_password: String,
    new_password: String,
}

/// Change the own password (local users); ends other sessions.
///
/// `POST /api/v1/me/password`.
#[utoipa::path(
    post,
    path = "/api/v1/me/password",
    operation_id = "changePassword",
    tag = "me",
    security(("session" = []), ("bearer" = [])),
    request_body = PasswordBody,
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn change_password(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<StatusCode, ApiError> {
    let b: PasswordBody = json_body(&headers, &body)?;
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    ctx.run(move |u| u.change_password(&caller, &actor, &b.current_password, &b.new_password)).await??;
    Ok(StatusCode::NO_CONTENT)
}

/// Start TOTP enrolment: secret, otpauth URI and QR code (SVG data URL).
///
/// `POST /api/v1/me/totp/enroll`.
#[utoipa::path(
    post,
    path = "/api/v1/me/totp/enroll",
    operation_id = "totpEnroll",
    tag = "me",
    security(("session" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "A new secret to confirm", body = TotpEnrolment)
    )
)]
pub async fn totp_enroll(EnrollCtx(ctx): EnrollCtx) -> Result<Json<TotpEnrolment>, ApiError> {
    let caller = ctx.caller.clone();
    let (secret, uri, qr) = ctx.run(move |u| u.totp_enroll(&caller)).await??;
    Ok(Json(TotpEnrolment { secret, otpauth_uri: uri, qr_svg: qr }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct CodeBody {
    code: String,
}

/// Activate TOTP with a code from the app; returns recovery codes.
///
/// `POST /api/v1/me/totp/confirm`.
#[utoipa::path(
    post,
    path = "/api/v1/me/totp/confirm",
    operation_id = "totpConfirm",
    tag = "me",
    security(("session" = []), ("bearer" = [])),
    request_body = CodeBody,
    responses(
        (status = 200, description = "TOTP on; the recovery codes (shown once)", body = RecoveryCodes)
    )
)]
pub async fn totp_confirm(
    EnrollCtx(ctx): EnrollCtx,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<RecoveryCodes>, ApiError> {
    let b: CodeBody = json_body(&headers, &body)?;
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    let codes = ctx.run(move |u| u.totp_confirm(&caller, &actor, &b.code)).await??;
    Ok(Json(RecoveryCodes { recovery_codes: codes }))
}

/// New recovery codes (the old ones stop working).
///
/// `POST /api/v1/me/totp/recovery-codes`.
#[utoipa::path(
    post,
    path = "/api/v1/me/totp/recovery-codes",
    operation_id = "recoveryCodes",
    tag = "me",
    security(("session" = []), ("bearer" = [])),
    request_body = CodeBody,
    responses(
        (status = 200, description = "New recovery codes (shown once)", body = RecoveryCodes)
    )
)]
pub async fn recovery_codes(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<Json<RecoveryCodes>, ApiError> {
    let b: CodeBody = json_body(&headers, &body)?;
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    let codes = ctx.run(move |u| u.regenerate_recovery_codes(&caller, &actor, &b.code)).await??;
    Ok(Json(RecoveryCodes { recovery_codes: codes }))
}

/// Turn TOTP off (not when required).
///
/// `DELETE /api/v1/me/totp`.
#[utoipa::path(
    delete,
    path = "/api/v1/me/totp",
    operation_id = "totpDisable",
    tag = "me",
    security(("session" = []), ("bearer" = [])),
    request_body = CodeBody,
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn totp_disable(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<StatusCode, ApiError> {
    let b: CodeBody = json_body(&headers, &body)?;
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    ctx.run(move |u| u.totp_disable(&caller, &actor, &b.code)).await??;
    Ok(StatusCode::NO_CONTENT)
}
