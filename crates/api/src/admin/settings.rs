//! Node settings and state for admins and operators (`docs/specs/ui-api.md`
//! §12): the effective auth policy (read-only), the stored LDAP settings
//! (read, store, remove — never answering the bind password — and a test
//! bind that changes nothing), and `GET /api/v1/node/stats`, the
//! `/_node/stats` document behind a user login.

use crate::error::ApiError;
use crate::session::{json_body, Ctx};
use crate::ApiState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sluice_users::config::format_duration;
use sluice_users::ldap::SettingsSource;
use sluice_users::{LdapSettings, UserType};
use utoipa::ToSchema;

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

/// `/_node/stats` for operators and admins.
///
/// `GET /api/v1/node/stats`: `/_node/stats` for operators and admins.
#[utoipa::path(
    get,
    path = "/api/v1/node/stats",
    operation_id = "nodeStatsUser",
    tag = "node",
    security(("session" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "As `GET /_node/stats`", body = Object)
    )
)]
pub async fn node_stats(ctx: Ctx, State(s): State<ApiState>) -> Result<Json<Value>, ApiError> {
    ctx.require(UserType::Operator)?;
    Ok(Json(crate::stats_json(&s)))
}

/// `GET`/`PUT /api/v1/settings/ldap` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct LdapState {
    /// Where the settings come from.
    pub source: SettingsSource,
    /// The settings, without the bind password; `null` when LDAP is off.
    #[schema(required = true)]
    pub settings: Option<LdapSettingsView>,
}

/// [`LdapSettings`] as answered: the bind password only as whether one is set.
#[derive(Debug, Serialize, ToSchema)]
pub struct LdapSettingsView {
    /// The settings (`search_bind_password` is never sent).
    #[serde(flatten)]
    pub settings: LdapSettings,
    /// Whether a search bind password (or its environment variable) is set.
    pub search_bind_password_set: bool,
}

/// `POST /api/v1/settings/ldap/test` response.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum LdapTestResult {
    /// The user bound; what they would map to.
    Ok {
        /// `true`.
        ok: bool,
        /// The user's DN.
        dn: String,
        /// Their LDAP groups.
        ldap_groups: Vec<String>,
        /// The sluice groups those map to.
        groups: Vec<String>,
        /// The user type they map to.
        #[serde(rename = "type")]
        user_type: UserType,
    },
    /// The test failed.
    Failed {
        /// `false`.
        ok: bool,
        /// Why.
        error: String,
    },
}

fn ldap_json(source: SettingsSource, s: Option<LdapSettings>) -> LdapState {
    let settings = s.map(|settings| LdapSettingsView {
        search_bind_password_set: settings.search_bind_password.is_some()
            || settings.search_bind_password_env.is_some(),
        settings,
    });
    LdapState { source, settings }
}

/// LDAP settings (admin).
///
/// `GET /api/v1/settings/ldap`.
#[utoipa::path(
    get,
    path = "/api/v1/settings/ldap",
    operation_id = "getLdap",
    tag = "settings",
    security(("session" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "`{\"source\", \"settings\": LdapSettings + search_bind_password_set | null}`", body = LdapState)
    )
)]
pub async fn get_ldap(ctx: Ctx) -> Result<Json<LdapState>, ApiError> {
    let (source, s) = ctx.admin(|u, _| u.ldap_settings()).await?;
    Ok(Json(ldap_json(source, s)))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct LdapBody {
    settings: LdapSettings,
}

/// Store LDAP settings (admin; 409 when set in the config file).
///
/// `PUT /api/v1/settings/ldap`.
#[utoipa::path(
    put,
    path = "/api/v1/settings/ldap",
    operation_id = "putLdap",
    tag = "settings",
    security(("session" = []), ("bearer" = [])),
    request_body = LdapBody,
    responses(
        (status = 200, description = "As `GET`", body = LdapState)
    )
)]
pub async fn put_ldap(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<Json<LdapState>, ApiError> {
    let (source, s) = ctx
        .admin_with(&headers, &body, |u, actor, b: LdapBody| {
            u.set_ldap_settings(actor, b.settings)?;
            u.ldap_settings()
        })
        .await?;
    Ok(Json(ldap_json(source, s)))
}

/// Remove stored LDAP settings (admin).
///
/// `DELETE /api/v1/settings/ldap`.
#[utoipa::path(
    delete,
    path = "/api/v1/settings/ldap",
    operation_id = "deleteLdap",
    tag = "settings",
    security(("session" = []), ("bearer" = [])),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn delete_ldap(ctx: Ctx) -> Result<StatusCode, ApiError> {
    ctx.admin(|u, actor| u.delete_ldap_settings(actor)).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct LdapTest {
    username: String,
    password: String,
    #[serde(default)]
    settings: Option<LdapSettings>,
}

/// Bind as a user and show the mapping, changing nothing (admin).
///
/// `POST /api/v1/settings/ldap/test`.
#[utoipa::path(
    post,
    path = "/api/v1/settings/ldap/test",
    operation_id = "testLdap",
    tag = "settings",
    security(("session" = []), ("bearer" = [])),
    request_body = LdapTest,
    responses(
        (status = 200, description = "Whether the bind worked, and what it maps to", body = LdapTestResult)
    )
)]
pub async fn test_ldap(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<Json<LdapTestResult>, ApiError> {
    ctx.require(UserType::Admin)?;
    let t: LdapTest = json_body(&headers, &body)?;
    let r = ctx.run(move |u| u.ldap_test(t.settings, &t.username, &t.password)).await??;
    Ok(Json(match r {
        Ok((id, m)) => {
            LdapTestResult::Ok { ok: true, dn: id.dn, ldap_groups: id.groups, groups: m.groups, user_type: m.user_type }
        }
        Err(error) => LdapTestResult::Failed { ok: false, error },
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The LDAP settings answer never carries the bind password, says
    /// whether one is set, and keeps the settings' own keys at the top level
    /// (as before the answer was typed for the OpenAPI document).
    #[test]
    fn ldap_state_hides_the_bind_password() {
        let settings: LdapSettings = serde_json::from_value(json!({
            "url": "ldap://ldap.example.org",
            "search_base": "ou=people,dc=example,dc=org",
            "search_bind_password": "s3cret",
        }))
        .unwrap();
        let v = serde_json::to_value(ldap_json(SettingsSource::Database, Some(settings))).unwrap();
        assert_eq!(v["source"], "database");
        let s = v["settings"].as_object().unwrap();
        assert!(!s.contains_key("search_bind_password"), "{v}");
        assert!(!v.to_string().contains("s3cret"), "{v}");
        assert_eq!(s["search_bind_password_set"], true);
        assert_eq!(s["url"], "ldap://ldap.example.org");
        assert_eq!(s["timeout"], "5s");
        assert_eq!(s["group_attribute"], "memberOf");
        let off = serde_json::to_value(ldap_json(SettingsSource::None, None)).unwrap();
        assert_eq!(off, json!({"source": "none", "settings": null}));
    }
}
