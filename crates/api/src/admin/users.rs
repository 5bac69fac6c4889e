//! User endpoints (`docs/specs/ui-api.md` §4): list, create, read, change
//! and delete users, clear a login lockout, reset a user's TOTP. Admins only.

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use sluice_users::accounts::{NewUser, UserPatch};
use sluice_users::User;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::session::Ctx;

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
