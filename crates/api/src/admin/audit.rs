//! The audit log endpoint (`docs/specs/ui-api.md` §11): filtered pages of
//! audit records, newest first. Admins only.

use axum::extract::Query;
use axum::Json;
use serde::{Deserialize, Serialize};
use sluice_users::{AuditQuery, AuditRecord, UserType};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::session::Ctx;

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
