//! The login endpoints (`docs/specs/ui-api.md` §1.2, §2): the login page's
//! methods, password login, the second factor, logout.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use sluice_users::login::csrf_token;
use sluice_users::{Factor, LoginAttempt, LoginError, Stage, Users};
use utoipa::ToSchema;

use super::cookies::{clear_cookies, secure, session_cookies, with_cookies};
use super::{blocking, cookie, json_body, me_json, users_off, Client, Me, UsersOf, CSRF_HEADER, SESSION_COOKIE};
use crate::auth::ct_eq;
use crate::error::ApiError;
use crate::ApiState;

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
