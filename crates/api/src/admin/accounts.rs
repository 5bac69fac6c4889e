//! Account endpoints (`docs/specs/ui-api.md` §4): users (list, create, read,
//! change, delete, clear a login lockout, reset TOTP) and groups (list,
//! create, read, change, delete, add and remove members). Admins only.

use crate::error::ApiError;
use crate::session::Ctx;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use sluice_users::accounts::{GroupPatch, NewGroup, NewUser, UserPatch};
use sluice_users::{Group, User};
use utoipa::ToSchema;

/// `GET /api/v1/users` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserList {
    /// Every user, by name.
    pub users: Vec<User>,
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
    let users = ctx.admin(|u, _| u.list_users()).await?;
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
    let user = ctx.admin_with(&headers, &body, |u, actor, new: NewUser| u.create_user(actor, new)).await?;
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
    Ok(Json(ctx.admin(move |u, _| u.get_user(&name)).await?))
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
    Ok(Json(
        ctx.admin_with(&headers, &body, move |u, actor, patch: UserPatch| u.update_user(actor, &name, patch)).await?,
    ))
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
    ctx.admin(move |u, actor| u.delete_user(actor, &name)).await?;
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
    ctx.admin(move |u, actor| u.unlock(actor, &name)).await?;
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
    ctx.admin(move |u, actor| u.reset_totp(actor, &name)).await?;
    Ok(StatusCode::NO_CONTENT)
}

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
