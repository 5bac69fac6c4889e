//! Access endpoints: who may read what, with which credentials, and what was
//! done — source assignments (`docs/specs/ui-api.md` §6, admins only), API
//! tokens (§7: own tokens for everyone; every user's tokens, and
//! admin-scoped ones, for admins; the secret is shown once) and the audit
//! log (§11: filtered pages, newest first, admins only).

use crate::error::ApiError;
use crate::session::{json_body, Ctx};
use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::{Deserialize, Serialize};
use sluice_query::SourcePattern;
use sluice_users::{ApiToken, Assignment, AuditQuery, AuditRecord, Subject, SubjectKind, TokenScope, UserType};
use std::time::Duration;
use utoipa::{IntoParams, ToSchema};

/// `GET /api/v1/assignments` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct AssignmentList {
    /// The assignments.
    pub assignments: Vec<Assignment>,
}

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
    let created =
        ctx.admin_with(&headers, &body, |u, actor, a: NewAssignment| u.assign(actor, &a.subject, a.pattern)).await?;
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
    ctx.admin(move |u, actor| u.unassign(actor, id)).await?;
    Ok(StatusCode::NO_CONTENT)
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

/// `GET /api/v1/audit` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPage {
    /// Newest first.
    pub records: Vec<AuditRecord>,
    /// Pass as `before` for the next page; `null` on the last page.
    #[schema(required = true)]
    pub next: Option<String>,
}

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
