//! The session endpoints (`docs/specs/ui-api.md` §1.2, §2, §3): the login
//! page's methods, password login, the second factor and logout; the
//! caller's own `GET /api/v1/me`, changing the own password, and TOTP
//! enrolment, recovery codes and turning TOTP off.

use super::auth::{clear_cookies, secure, session_cookies, with_cookies};
use super::{blocking, cookie, json_body, users_off, Client, Ctx, EnrollCtx, UsersOf, CSRF_HEADER, SESSION_COOKIE};
use crate::auth::ct_eq;
use crate::error::ApiError;
use crate::ApiState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use sluice_query::SourcePattern;
use sluice_users::login::csrf_token;
use sluice_users::model::{TotpStatus, UserSource};
use sluice_users::{Caller, Factor, LoginAttempt, LoginError, Stage, TokenScope, UserType, Users, Via};
use std::sync::Arc;
use utoipa::ToSchema;

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
