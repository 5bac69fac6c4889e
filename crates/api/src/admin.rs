//! Administration endpoints (`docs/specs/ui-api.md` §4, §6, §7, §11, §12):
//! users, groups, assignments, API tokens, the audit log, LDAP and auth
//! settings, and node stats for operators. Each handler checks the caller's
//! type first; the users service writes the audit records.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use sluice_query::SourcePattern;
use sluice_users::accounts::{GroupPatch, NewGroup, NewUser, UserPatch};
use sluice_users::config::format_duration;
use sluice_users::{AuditQuery, LdapSettings, Subject, SubjectKind, TokenScope, UserType};

use crate::error::ApiError;
use crate::session::{json_body, Ctx};
use crate::ApiState;

// ---- users -----------------------------------------------------------------

/// `GET /api/v1/users`.
pub async fn list_users(ctx: Ctx) -> Result<Json<Value>, ApiError> {
    ctx.require(UserType::Admin)?;
    let users = ctx.run(|u| u.list_users()).await??;
    Ok(Json(json!({ "users": users })))
}

/// `POST /api/v1/users`.
pub async fn create_user(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    let new: NewUser = json_body(&headers, &body)?;
    let actor = ctx.actor();
    let user = ctx.run(move |u| u.create_user(&actor, new)).await??;
    Ok((StatusCode::CREATED, Json(user)))
}

/// `GET /api/v1/users/{username}`.
pub async fn get_user(ctx: Ctx, Path(name): Path<String>) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    Ok(Json(ctx.run(move |u| u.get_user(&name)).await??))
}

/// `PATCH /api/v1/users/{username}`.
pub async fn update_user(
    ctx: Ctx,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    let patch: UserPatch = json_body(&headers, &body)?;
    let actor = ctx.actor();
    Ok(Json(ctx.run(move |u| u.update_user(&actor, &name, patch)).await??))
}

/// `DELETE /api/v1/users/{username}`.
pub async fn delete_user(ctx: Ctx, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.delete_user(&actor, &name)).await??;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/v1/users/{username}/unlock`.
pub async fn unlock_user(ctx: Ctx, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.unlock(&actor, &name)).await??;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /api/v1/users/{username}/totp`.
pub async fn reset_totp(ctx: Ctx, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.reset_totp(&actor, &name)).await??;
    Ok(StatusCode::NO_CONTENT)
}

// ---- groups ----------------------------------------------------------------

/// `GET /api/v1/groups`.
pub async fn list_groups(ctx: Ctx) -> Result<Json<Value>, ApiError> {
    ctx.require(UserType::Admin)?;
    let groups = ctx.run(|u| u.list_groups()).await??;
    Ok(Json(json!({ "groups": groups })))
}

/// `POST /api/v1/groups`.
pub async fn create_group(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    let new: NewGroup = json_body(&headers, &body)?;
    let actor = ctx.actor();
    let g = ctx.run(move |u| u.create_group(&actor, new)).await??;
    Ok((StatusCode::CREATED, Json(g)))
}

/// `GET /api/v1/groups/{name}`.
pub async fn get_group(ctx: Ctx, Path(name): Path<String>) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    Ok(Json(ctx.run(move |u| u.get_group(&name)).await??))
}

/// `PATCH /api/v1/groups/{name}`.
pub async fn update_group(
    ctx: Ctx,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    let patch: GroupPatch = json_body(&headers, &body)?;
    let actor = ctx.actor();
    Ok(Json(ctx.run(move |u| u.update_group(&actor, &name, patch)).await??))
}

/// `DELETE /api/v1/groups/{name}`.
pub async fn delete_group(ctx: Ctx, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.delete_group(&actor, &name)).await??;
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /api/v1/groups/{name}/members/{username}`.
pub async fn add_member(ctx: Ctx, Path((group, user)): Path<(String, String)>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.add_member(&actor, &group, &user)).await??;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /api/v1/groups/{name}/members/{username}`.
pub async fn remove_member(ctx: Ctx, Path((group, user)): Path<(String, String)>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.remove_member(&actor, &group, &user)).await??;
    Ok(StatusCode::NO_CONTENT)
}

// ---- assignments -----------------------------------------------------------

/// `GET /api/v1/assignments` filters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssignmentFilter {
    /// Of one user.
    #[serde(default)]
    user: Option<String>,
    /// Of one group.
    #[serde(default)]
    group: Option<String>,
}

/// `GET /api/v1/assignments[?user=…|?group=…]`.
pub async fn list_assignments(ctx: Ctx, Query(f): Query<AssignmentFilter>) -> Result<Json<Value>, ApiError> {
    ctx.require(UserType::Admin)?;
    let subject = match (f.user, f.group) {
        (Some(name), None) => Some(Subject { kind: SubjectKind::User, name }),
        (None, Some(name)) => Some(Subject { kind: SubjectKind::Group, name }),
        (None, None) => None,
        _ => return Err(ApiError::InvalidRequest("give at most one of `user` and `group`".into())),
    };
    let list = ctx.run(move |u| u.list_assignments(subject.as_ref())).await??;
    Ok(Json(json!({ "assignments": list })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewAssignment {
    subject: Subject,
    pattern: SourcePattern,
}

/// `POST /api/v1/assignments`.
pub async fn create_assignment(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    let a: NewAssignment = json_body(&headers, &body)?;
    let actor = ctx.actor();
    let created = ctx.run(move |u| u.assign(&actor, &a.subject, a.pattern)).await??;
    Ok((StatusCode::CREATED, Json(created)))
}

/// `DELETE /api/v1/assignments/{id}`.
pub async fn delete_assignment(ctx: Ctx, Path(id): Path<i64>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.unassign(&actor, id)).await??;
    Ok(StatusCode::NO_CONTENT)
}

// ---- tokens ----------------------------------------------------------------

/// `GET /api/v1/tokens` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenFilter {
    /// Admins: every user's tokens.
    #[serde(default)]
    all: bool,
}

/// `GET /api/v1/tokens[?all=true]`.
pub async fn list_tokens(ctx: Ctx, Query(f): Query<TokenFilter>) -> Result<Json<Value>, ApiError> {
    if f.all {
        ctx.require(UserType::Admin)?;
    }
    let owner = (!f.all).then(|| ctx.caller.username.clone());
    let tokens = ctx.run(move |u| u.list_tokens(owner.as_deref())).await??;
    Ok(Json(json!({ "tokens": tokens })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewToken {
    name: String,
    scope: TokenScope,
    #[serde(default)]
    expires_in: Option<String>,
    #[serde(default)]
    owner: Option<String>,
}

/// `POST /api/v1/tokens`.
pub async fn create_token(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    let t: NewToken = json_body(&headers, &body)?;
    let owner = match t.owner {
        Some(o) if o != ctx.caller.username => {
            ctx.require(UserType::Admin)?;
            o
        }
        _ => ctx.caller.username.clone(),
    };
    if t.scope == TokenScope::Admin {
        ctx.require(UserType::Admin)?;
    }
    let expires: Option<Duration> = match t.expires_in.as_deref() {
        None => None,
        Some(s) => Some(
            sluice_core::config::HumanDuration::parse(s)
                .map_err(|m| ApiError::InvalidField { field: "expires_in".into(), message: m })?
                .0,
        ),
    };
    let actor = ctx.actor();
    let (token, secret) = ctx.run(move |u| u.create_token(&actor, &owner, &t.name, t.scope, expires)).await??;
    Ok((StatusCode::CREATED, Json(json!({"token": token, "secret": secret}))))
}

/// `DELETE /api/v1/tokens/{id}`: own tokens, or any as admin.
pub async fn revoke_token(ctx: Ctx, Path(id): Path<i64>) -> Result<StatusCode, ApiError> {
    let owner = (!ctx.is_admin()).then(|| ctx.caller.username.clone());
    let actor = ctx.actor();
    ctx.run(move |u| u.revoke_token(&actor, id, owner.as_deref())).await??;
    Ok(StatusCode::NO_CONTENT)
}

// ---- audit -----------------------------------------------------------------

/// `GET /api/v1/audit` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditParams {
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    size: Option<usize>,
    #[serde(default)]
    before: Option<i64>,
}

/// `GET /api/v1/audit`.
pub async fn audit(
    ctx: Ctx,
    q: Result<Query<AuditParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(UserType::Admin)?;
    let Query(p) = q.map_err(|e| ApiError::InvalidRequest(e.body_text()))?;
    let now = sluice_core::event::now_ns();
    let ms = |t: Option<&str>| -> Result<Option<i64>, ApiError> {
        t.map(|t| sluice_query::parse_time(t, now).map(|ns| ns / 1_000_000).map_err(|e| ApiError::Time(e.0)))
            .transpose()
    };
    let query = AuditQuery {
        actor: p.actor,
        action: p.action,
        target: p.target,
        q: p.q,
        from_ms: ms(p.from.as_deref())?,
        to_ms: ms(p.to.as_deref())?,
        size: p.size,
        before: p.before,
    };
    let (records, next) = ctx.run(move |u| u.audit_query(&query)).await??;
    Ok(Json(json!({"records": records, "next": next})))
}

// ---- settings --------------------------------------------------------------

/// `GET /api/v1/settings/auth`.
pub async fn auth_settings(ctx: Ctx) -> Result<Json<Value>, ApiError> {
    ctx.require(UserType::Admin)?;
    let (source, _) = ctx.run(|u| u.ldap_settings()).await??;
    let c = ctx.users.config();
    Ok(Json(json!({
        "session": {
            "idle_timeout": format_duration(c.session.idle_timeout.0),
            "absolute_timeout": format_duration(c.session.absolute_timeout.0),
        },
        "lockout": {
            "threshold": c.lockout.threshold,
            "window": format_duration(c.lockout.window.0),
            "duration": format_duration(c.lockout.duration.0),
        },
        "login_rate": {"per_minute": c.login_rate.per_minute, "burst": c.login_rate.burst},
        "password_min_length": c.password_min_length,
        "totp": {"issuer": c.totp.issuer, "require_types": c.totp.require_types},
        "ldap": source,
    })))
}

fn ldap_json(source: sluice_users::ldap::SettingsSource, s: Option<LdapSettings>) -> Value {
    let settings = s.map(|s| {
        let set = s.search_bind_password.is_some() || s.search_bind_password_env.is_some();
        let mut v = serde_json::to_value(&s).unwrap_or(Value::Null);
        v["search_bind_password_set"] = json!(set);
        v
    });
    json!({"source": source, "settings": settings})
}

/// `GET /api/v1/settings/ldap`.
pub async fn get_ldap(ctx: Ctx) -> Result<Json<Value>, ApiError> {
    ctx.require(UserType::Admin)?;
    let (source, s) = ctx.run(|u| u.ldap_settings()).await??;
    Ok(Json(ldap_json(source, s)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LdapBody {
    settings: LdapSettings,
}

/// `PUT /api/v1/settings/ldap`.
pub async fn put_ldap(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<Json<Value>, ApiError> {
    ctx.require(UserType::Admin)?;
    let b: LdapBody = json_body(&headers, &body)?;
    let actor = ctx.actor();
    let (source, s) = ctx
        .run(move |u| {
            u.set_ldap_settings(&actor, b.settings)?;
            u.ldap_settings()
        })
        .await??;
    Ok(Json(ldap_json(source, s)))
}

/// `DELETE /api/v1/settings/ldap`.
pub async fn delete_ldap(ctx: Ctx) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.delete_ldap_settings(&actor)).await??;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LdapTest {
    username: String,
    password: String,
    #[serde(default)]
    settings: Option<LdapSettings>,
}

/// `POST /api/v1/settings/ldap/test`.
pub async fn test_ldap(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<Json<Value>, ApiError> {
    ctx.require(UserType::Admin)?;
    let t: LdapTest = json_body(&headers, &body)?;
    let r = ctx.run(move |u| u.ldap_test(t.settings, &t.username, &t.password)).await??;
    Ok(Json(match r {
        Ok((id, m)) => {
            json!({"ok": true, "dn": id.dn, "ldap_groups": id.groups, "groups": m.groups, "type": m.user_type})
        }
        Err(e) => json!({"ok": false, "error": e}),
    }))
}

// ---- node ------------------------------------------------------------------

/// `GET /api/v1/node/stats`: `/_node/stats` for operators and admins.
pub async fn node_stats(ctx: Ctx, State(s): State<ApiState>) -> Result<Json<Value>, ApiError> {
    ctx.require(UserType::Operator)?;
    Ok(Json(crate::stats_json(&s)))
}
