//! The effective auth policy endpoint (`docs/specs/ui-api.md` §12):
//! `GET /api/v1/settings/auth`, read-only. Admins only.

use axum::Json;
use serde::Serialize;
use sluice_users::config::format_duration;
use sluice_users::ldap::SettingsSource;
use sluice_users::UserType;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::session::Ctx;

/// The effective auth policy (admin, read-only).
///
/// `GET /api/v1/settings/auth`.
#[utoipa::path(
    get,
    path = "/api/v1/settings/auth",
    operation_id = "authSettings",
    tag = "settings",
    security(("session" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "The effective `[auth]` policy: `session`, `lockout`, `login_rate`, `password_min_length`, `totp`, `ldap`", body = AuthPolicy)
    )
)]
pub async fn auth_settings(ctx: Ctx) -> Result<Json<AuthPolicy>, ApiError> {
    ctx.require(UserType::Admin)?;
    let (source, _) = ctx.run(|u| u.ldap_settings()).await??;
    let c = ctx.users.config();
    Ok(Json(AuthPolicy {
        session: SessionPolicy {
            idle_timeout: format_duration(c.session.idle_timeout.0),
            absolute_timeout: format_duration(c.session.absolute_timeout.0),
        },
        lockout: LockoutPolicy {
            threshold: c.lockout.threshold,
            window: format_duration(c.lockout.window.0),
            duration: format_duration(c.lockout.duration.0),
        },
        login_rate: LoginRatePolicy { per_minute: c.login_rate.per_minute, burst: c.login_rate.burst },
        password_min_length: c.password_min_length,
        totp: TotpPolicy { issuer: c.totp.issuer.clone(), require_types: c.totp.require_types.clone() },
        ldap: source,
    }))
}

/// `GET /api/v1/settings/auth`: the effective `[auth]` policy (read-only).
#[derive(Debug, Serialize, ToSchema)]
pub struct AuthPolicy {
    /// Session lifetimes.
    pub session: SessionPolicy,
    /// Login lockout per user name.
    pub lockout: LockoutPolicy,
    /// Login attempts per client address.
    pub login_rate: LoginRatePolicy,
    /// Shortest local password.
    pub password_min_length: usize,
    /// TOTP.
    pub totp: TotpPolicy,
    /// Where the LDAP settings come from.
    pub ldap: SettingsSource,
}

/// `session` of [`AuthPolicy`] (durations as `"30m"`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionPolicy {
    /// Ends after this long without a request.
    pub idle_timeout: String,
    /// Ends this long after login.
    pub absolute_timeout: String,
}

/// `lockout` of [`AuthPolicy`].
#[derive(Debug, Serialize, ToSchema)]
pub struct LockoutPolicy {
    /// Failures within `window` that lock the name.
    pub threshold: u32,
    /// The window.
    pub window: String,
    /// How long the lock lasts.
    pub duration: String,
}

/// `login_rate` of [`AuthPolicy`].
#[derive(Debug, Serialize, ToSchema)]
pub struct LoginRatePolicy {
    /// Attempts per minute per address.
    pub per_minute: u32,
    /// Burst.
    pub burst: u32,
}

/// `totp` of [`AuthPolicy`].
#[derive(Debug, Serialize, ToSchema)]
pub struct TotpPolicy {
    /// The issuer shown in authenticator apps.
    pub issuer: String,
    /// User types that must use TOTP.
    pub require_types: Vec<UserType>,
}
