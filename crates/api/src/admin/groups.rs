//! Group endpoints (`docs/specs/ui-api.md` §4): list, create, read, change
//! and delete groups, add and remove members. Admins only.

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use sluice_users::accounts::{GroupPatch, NewGroup};
use sluice_users::Group;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::session::Ctx;

/// `GET /api/v1/groups` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupList {
    /// Every group, by name.
    pub groups: Vec<Group>,
}

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
    let groups = ctx.admin(|u, _| u.list_groups()).await?;
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
    let g = ctx.admin_with(&headers, &body, |u, actor, new: NewGroup| u.create_group(actor, new)).await?;
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
    Ok(Json(ctx.admin(move |u, _| u.get_group(&name)).await?))
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
    Ok(Json(
        ctx.admin_with(&headers, &body, move |u, actor, patch: GroupPatch| u.update_group(actor, &name, patch)).await?,
    ))
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
    ctx.admin(move |u, actor| u.delete_group(actor, &name)).await?;
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
    ctx.admin(move |u, actor| u.add_member(actor, &group, &user)).await?;
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
    ctx.admin(move |u, actor| u.remove_member(actor, &group, &user)).await?;
    Ok(StatusCode::NO_CONTENT)
}
