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
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sluice_query::SourcePattern;
use sluice_users::accounts::{GroupPatch, NewGroup, NewUser, UserPatch};
use sluice_users::config::format_duration;
use sluice_users::ldap::SettingsSource;
use sluice_users::{
    ApiToken, Assignment, AuditQuery, AuditRecord, Group, LdapSettings, Subject, SubjectKind, TokenScope, User,
    UserType,
};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::session::{json_body, Ctx};
use crate::ApiState;

// ---- users -----------------------------------------------------------------

/// `GET /api/v1/users` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserList {
    /// Every user, by name.
    pub users: Vec<User>,
}

/// `GET /api/v1/groups` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupList {
    /// Every group, by name.
    pub groups: Vec<Group>,
}

/// `GET /api/v1/assignments` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct AssignmentList {
    /// The assignments.
    pub assignments: Vec<Assignment>,
}

/// `GET /api/v1/tokens` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenList {
    /// The tokens, without their secrets.
    pub tokens: Vec<ApiToken>,
}

/// `POST /api/v1/tokens` response: the token and its secret, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedToken {
    /// The token.
    pub token: ApiToken,
    /// The bearer secret (`slt_…`); not stored, not shown again.
    pub secret: String,
}

/// `GET /api/v1/audit` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPage {
    /// Newest first.
    pub records: Vec<AuditRecord>,
    /// Pass as `before` for the next page; `null` on the last page.
    #[schema(required = true)]
    pub next: Option<String>,
}

/// Users (admin).
///
/// `GET /api/v1/users`.
#[utoipa::path(
    get,
    path = "/api/v1/users",
    operation_id = "listUsers",
    tag = "users",
    security(("session" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "Every user", body = UserList)
    )
)]
pub async fn list_users(ctx: Ctx) -> Result<Json<UserList>, ApiError> {
    ctx.require(UserType::Admin)?;
    let users = ctx.run(|u| u.list_users()).await??;
    Ok(Json(UserList { users }))
}

/// Create a local user (admin).
///
/// `POST /api/v1/users`.
#[utoipa::path(
    post,
    path = "/api/v1/users",
    operation_id = "createUser",
    tag = "users",
    security(("session" = []), ("bearer" = [])),
    request_body = NewUser,
    responses(
        (status = 201, description = "Created", body = User)
    )
)]
pub async fn create_user(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    let new: NewUser = json_body(&headers, &body)?;
    let actor = ctx.actor();
    let user = ctx.run(move |u| u.create_user(&actor, new)).await??;
    Ok((StatusCode::CREATED, Json(user)))
}

/// One user (admin).
///
/// `GET /api/v1/users/{username}`.
#[utoipa::path(
    get,
    path = "/api/v1/users/{username}",
    operation_id = "getUser",
    tag = "users",
    security(("session" = []), ("bearer" = [])),
    params(("username" = String, Path, description = "The user name.")),
    responses(
        (status = 200, description = "The user", body = User)
    )
)]
pub async fn get_user(ctx: Ctx, Path(name): Path<String>) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    Ok(Json(ctx.run(move |u| u.get_user(&name)).await??))
}

/// Change a user (admin).
///
/// `PATCH /api/v1/users/{username}`.
#[utoipa::path(
    patch,
    path = "/api/v1/users/{username}",
    operation_id = "updateUser",
    tag = "users",
    security(("session" = []), ("bearer" = [])),
    params(("username" = String, Path, description = "The user name.")),
    request_body = UserPatch,
    responses(
        (status = 200, description = "The changed user", body = User)
    )
)]
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

/// Delete a user and what they own (admin).
///
/// `DELETE /api/v1/users/{username}`.
#[utoipa::path(
    delete,
    path = "/api/v1/users/{username}",
    operation_id = "deleteUser",
    tag = "users",
    security(("session" = []), ("bearer" = [])),
    params(("username" = String, Path, description = "The user name.")),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn delete_user(ctx: Ctx, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.delete_user(&actor, &name)).await??;
    Ok(StatusCode::NO_CONTENT)
}

/// Clear a login lockout (admin).
///
/// `POST /api/v1/users/{username}/unlock`.
#[utoipa::path(
    post,
    path = "/api/v1/users/{username}/unlock",
    operation_id = "unlockUser",
    tag = "users",
    security(("session" = []), ("bearer" = [])),
    params(("username" = String, Path, description = "The user name.")),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn unlock_user(ctx: Ctx, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.unlock(&actor, &name)).await??;
    Ok(StatusCode::NO_CONTENT)
}

/// Reset a user's TOTP (admin).
///
/// `DELETE /api/v1/users/{username}/totp`.
#[utoipa::path(
    delete,
    path = "/api/v1/users/{username}/totp",
    operation_id = "resetTotp",
    tag = "users",
    security(("session" = []), ("bearer" = [])),
    params(("username" = String, Path, description = "The user name.")),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn reset_totp(ctx: Ctx, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.reset_totp(&actor, &name)).await??;
    Ok(StatusCode::NO_CONTENT)
}

// ---- groups ----------------------------------------------------------------

/// Groups (admin).
///
/// `GET /api/v1/groups`.
#[utoipa::path(
    get,
    path = "/api/v1/groups",
    operation_id = "listGroups",
    tag = "groups",
    security(("session" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "Every group", body = GroupList)
    )
)]
pub async fn list_groups(ctx: Ctx) -> Result<Json<GroupList>, ApiError> {
    ctx.require(UserType::Admin)?;
    let groups = ctx.run(|u| u.list_groups()).await??;
    Ok(Json(GroupList { groups }))
}

/// Create a group (admin).
///
/// `POST /api/v1/groups`.
#[utoipa::path(
    post,
    path = "/api/v1/groups",
    operation_id = "createGroup",
    tag = "groups",
    security(("session" = []), ("bearer" = [])),
    request_body = NewGroup,
    responses(
        (status = 201, description = "Created", body = Group)
    )
)]
pub async fn create_group(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    let new: NewGroup = json_body(&headers, &body)?;
    let actor = ctx.actor();
    let g = ctx.run(move |u| u.create_group(&actor, new)).await??;
    Ok((StatusCode::CREATED, Json(g)))
}

/// One group (admin).
///
/// `GET /api/v1/groups/{name}`.
#[utoipa::path(
    get,
    path = "/api/v1/groups/{name}",
    operation_id = "getGroup",
    tag = "groups",
    security(("session" = []), ("bearer" = [])),
    params(("name" = String, Path, description = "The group name.")),
    responses(
        (status = 200, description = "The group", body = Group)
    )
)]
pub async fn get_group(ctx: Ctx, Path(name): Path<String>) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    Ok(Json(ctx.run(move |u| u.get_group(&name)).await??))
}

/// Change a group (admin).
///
/// `PATCH /api/v1/groups/{name}`.
#[utoipa::path(
    patch,
    path = "/api/v1/groups/{name}",
    operation_id = "updateGroup",
    tag = "groups",
    security(("session" = []), ("bearer" = [])),
    params(("name" = String, Path, description = "The group name.")),
    request_body = GroupPatch,
    responses(
        (status = 200, description = "The changed group", body = Group)
    )
)]
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

/// Delete a group (admin).
///
/// `DELETE /api/v1/groups/{name}`.
#[utoipa::path(
    delete,
    path = "/api/v1/groups/{name}",
    operation_id = "deleteGroup",
    tag = "groups",
    security(("session" = []), ("bearer" = [])),
    params(("name" = String, Path, description = "The group name.")),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn delete_group(ctx: Ctx, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.delete_group(&actor, &name)).await??;
    Ok(StatusCode::NO_CONTENT)
}

/// Add a member (admin, idempotent).
///
/// `PUT /api/v1/groups/{name}/members/{username}`.
#[utoipa::path(
    put,
    path = "/api/v1/groups/{name}/members/{username}",
    operation_id = "addMember",
    tag = "groups",
    security(("session" = []), ("bearer" = [])),
    params(("name" = String, Path, description = "The group name."), ("username" = String, Path, description = "The user name.")),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn add_member(ctx: Ctx, Path((group, user)): Path<(String, String)>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.add_member(&actor, &group, &user)).await??;
    Ok(StatusCode::NO_CONTENT)
}

/// Remove a member (admin).
///
/// `DELETE /api/v1/groups/{name}/members/{username}`.
#[utoipa::path(
    delete,
    path = "/api/v1/groups/{name}/members/{username}",
    operation_id = "removeMember",
    tag = "groups",
    security(("session" = []), ("bearer" = [])),
    params(("name" = String, Path, description = "The group name."), ("username" = String, Path, description = "The user name.")),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn remove_member(ctx: Ctx, Path((group, user)): Path<(String, String)>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.remove_member(&actor, &group, &user)).await??;
    Ok(StatusCode::NO_CONTENT)
}

// ---- assignments -----------------------------------------------------------

/// `GET /api/v1/assignments` filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AssignmentFilter {
    /// Of one user.
    #[serde(default)]
    user: Option<String>,
    /// Of one group.
    #[serde(default)]
    group: Option<String>,
}

/// Source assignments (admin).
///
/// `GET /api/v1/assignments[?user=…|?group=…]`.
#[utoipa::path(
    get,
    path = "/api/v1/assignments",
    operation_id = "listAssignments",
    tag = "assignments",
    security(("session" = []), ("bearer" = [])),
    params(AssignmentFilter),
    responses(
        (status = 200, description = "The assignments", body = AssignmentList)
    )
)]
pub async fn list_assignments(ctx: Ctx, Query(f): Query<AssignmentFilter>) -> Result<Json<AssignmentList>, ApiError> {
    ctx.require(UserType::Admin)?;
    let subject = match (f.user, f.group) {
        (Some(name), None) => Some(Subject { kind: SubjectKind::User, name }),
        (None, Some(name)) => Some(Subject { kind: SubjectKind::Group, name }),
        (None, None) => None,
        _ => return Err(ApiError::InvalidRequest("give at most one of `user` and `group`".into())),
    };
    let list = ctx.run(move |u| u.list_assignments(subject.as_ref())).await??;
    Ok(Json(AssignmentList { assignments: list }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NewAssignment {
    subject: Subject,
    pattern: SourcePattern,
}

/// Assign a source pattern to a user or group (admin).
///
/// `POST /api/v1/assignments`.
#[utoipa::path(
    post,
    path = "/api/v1/assignments",
    operation_id = "createAssignment",
    tag = "assignments",
    security(("session" = []), ("bearer" = [])),
    request_body = NewAssignment,
    responses(
        (status = 201, description = "Created", body = Assignment)
    )
)]
pub async fn create_assignment(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    ctx.require(UserType::Admin)?;
    let a: NewAssignment = json_body(&headers, &body)?;
    let actor = ctx.actor();
    let created = ctx.run(move |u| u.assign(&actor, &a.subject, a.pattern)).await??;
    Ok((StatusCode::CREATED, Json(created)))
}

/// Remove an assignment (admin).
///
/// `DELETE /api/v1/assignments/{id}`.
#[utoipa::path(
    delete,
    path = "/api/v1/assignments/{id}",
    operation_id = "deleteAssignment",
    tag = "assignments",
    security(("session" = []), ("bearer" = [])),
    params(("id" = i64, Path, description = "The id.")),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn delete_assignment(ctx: Ctx, Path(id): Path<i64>) -> Result<StatusCode, ApiError> {
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.unassign(&actor, id)).await??;
    Ok(StatusCode::NO_CONTENT)
}

// ---- tokens ----------------------------------------------------------------

/// `GET /api/v1/tokens` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TokenFilter {
    /// Admins: every user's tokens.
    #[serde(default)]
    all: bool,
}

/// Own API tokens (all with ?all=true, admin).
///
/// `GET /api/v1/tokens[?all=true]`.
#[utoipa::path(
    get,
    path = "/api/v1/tokens",
    operation_id = "listTokens",
    tag = "tokens",
    security(("session" = []), ("bearer" = [])),
    params(TokenFilter),
    responses(
        (status = 200, description = "The tokens (without secrets)", body = TokenList)
    )
)]
pub async fn list_tokens(ctx: Ctx, Query(f): Query<TokenFilter>) -> Result<Json<TokenList>, ApiError> {
    if f.all {
        ctx.require(UserType::Admin)?;
    }
    let owner = (!f.all).then(|| ctx.caller.username.clone());
    let tokens = ctx.run(move |u| u.list_tokens(owner.as_deref())).await??;
    Ok(Json(TokenList { tokens }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NewToken {
    name: String,
    scope: TokenScope,
    #[serde(default)]
    expires_in: Option<String>,
    #[serde(default)]
    owner: Option<String>,
}

/// Create an API token; the secret is shown once.
///
/// `POST /api/v1/tokens`.
#[utoipa::path(
    post,
    path = "/api/v1/tokens",
    operation_id = "createToken",
    tag = "tokens",
    security(("session" = []), ("bearer" = [])),
    request_body = NewToken,
    responses(
        (status = 201, description = "Created; the secret is shown once", body = CreatedToken)
    )
)]
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
    Ok((StatusCode::CREATED, Json(CreatedToken { token, secret })))
}

/// Revoke a token (own, or any as admin).
///
/// `DELETE /api/v1/tokens/{id}`: own tokens, or any as admin.
#[utoipa::path(
    delete,
    path = "/api/v1/tokens/{id}",
    operation_id = "revokeToken",
    tag = "tokens",
    security(("session" = []), ("bearer" = [])),
    params(("id" = i64, Path, description = "The id.")),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn revoke_token(ctx: Ctx, Path(id): Path<i64>) -> Result<StatusCode, ApiError> {
    let owner = (!ctx.is_admin()).then(|| ctx.caller.username.clone());
    let actor = ctx.actor();
    ctx.run(move |u| u.revoke_token(&actor, id, owner.as_deref())).await??;
    Ok(StatusCode::NO_CONTENT)
}

// ---- audit -----------------------------------------------------------------

/// `GET /api/v1/audit` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
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

/// Audit records, newest first (admin).
///
/// `GET /api/v1/audit`.
#[utoipa::path(
    get,
    path = "/api/v1/audit",
    operation_id = "audit",
    tag = "audit",
    security(("session" = []), ("bearer" = [])),
    params(AuditParams),
    responses(
        (status = 200, description = "Newest first", body = AuditPage)
    )
)]
pub async fn audit(
    ctx: Ctx,
    q: Result<Query<AuditParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<AuditPage>, ApiError> {
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
    Ok(Json(AuditPage { records, next }))
}

// ---- settings --------------------------------------------------------------

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
    ctx.require(UserType::Admin)?;
    let (source, s) = ctx.run(|u| u.ldap_settings()).await??;
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
    ctx.require(UserType::Admin)?;
    let actor = ctx.actor();
    ctx.run(move |u| u.delete_ldap_settings(&actor)).await??;
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

// ---- node ------------------------------------------------------------------

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
