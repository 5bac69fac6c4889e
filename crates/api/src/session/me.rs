//! The caller's own endpoints (`docs/specs/ui-api.md` §3): `GET
//! /api/v1/me`, changing the own password, and TOTP enrolment, recovery
//! codes and turning TOTP off.

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde::{Deserialize, Serialize};
use sluice_query::SourcePattern;
use sluice_users::login::csrf_token;
use sluice_users::model::{TotpStatus, UserSource};
use sluice_users::{Caller, Stage, TokenScope, UserType, Users, Via};
use utoipa::ToSchema;

use super::{json_body, Ctx, EnrollCtx};
use crate::error::ApiError;

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
