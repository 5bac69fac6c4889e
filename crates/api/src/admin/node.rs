//! Node stats for operators and admins: `GET /api/v1/node/stats`, the
//! `/_node/stats` document behind a user login.

use axum::extract::State;
use axum::Json;
use serde_json::Value;
use sluice_users::UserType;

use crate::error::ApiError;
use crate::session::Ctx;
use crate::ApiState;

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
