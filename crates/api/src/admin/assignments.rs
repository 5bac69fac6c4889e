//! Source assignment endpoints (`docs/specs/ui-api.md` §6): which source
//! patterns a user or group may search. Admins only.

use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::{Deserialize, Serialize};
use sluice_query::SourcePattern;
use sluice_users::{Assignment, Subject, SubjectKind, UserType};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::session::Ctx;

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
