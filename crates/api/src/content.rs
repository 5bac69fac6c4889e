//! Dashboards and saved searches (`docs/specs/ui-api.md` §9–10), and
//! `POST /api/v1/dashboards/{id}/data`, which runs a dashboard's panels as
//! the **caller's** principal — a dashboard shared by someone who sees more
//! shows each viewer only their own sources.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use sluice_query::{AggregateRequest, AggregateResponse, SearchRequest, SearchResponse};
use sluice_users::content::{Dashboard, DashboardInput, SavedSearch, SavedSearchInput};
use sluice_users::Sharing;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::session::{json_body, Ctx};
use crate::ApiState;

/// `GET /api/v1/dashboards` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct DashboardList {
    /// The dashboards the caller may see, without their panels.
    pub dashboards: Vec<DashboardSummary>,
}

/// A dashboard without its panels and time range.
#[derive(Debug, Serialize, ToSchema)]
pub struct DashboardSummary {
    /// Id.
    pub id: i64,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Owner user name.
    pub owner: String,
    /// Sharing.
    pub sharing: Sharing,
    /// Version.
    pub version: i64,
    /// Last saved.
    pub updated_at: String,
    /// Whether the caller may change it.
    pub can_edit: bool,
}

impl From<Dashboard> for DashboardSummary {
    fn from(d: Dashboard) -> Self {
        Self {
            id: d.id,
            title: d.title,
            description: d.description,
            owner: d.owner,
            sharing: d.sharing,
            version: d.version,
            updated_at: d.updated_at,
            can_edit: d.can_edit,
        }
    }
}

/// `GET /api/v1/saved-searches` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct SavedSearchList {
    /// The saved searches the caller may see.
    pub saved_searches: Vec<SavedSearch>,
}

/// Dashboards the caller may see (summaries).
///
/// `GET /api/v1/dashboards`: summaries of the visible ones.
#[utoipa::path(
    get,
    path = "/api/v1/dashboards",
    operation_id = "listDashboards",
    tag = "dashboards",
    security(("session" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "Summaries of the visible dashboards", body = DashboardList)
    )
)]
pub async fn list_dashboards(ctx: Ctx) -> Result<Json<DashboardList>, ApiError> {
    let caller = ctx.caller.clone();
    let list = ctx.run(move |u| u.list_dashboards(&caller)).await??;
    let dashboards = list.into_iter().map(DashboardSummary::from).collect();
    Ok(Json(DashboardList { dashboards }))
}

/// Create a dashboard.
///
/// `POST /api/v1/dashboards`.
#[utoipa::path(
    post,
    path = "/api/v1/dashboards",
    operation_id = "createDashboard",
    tag = "dashboards",
    security(("session" = []), ("bearer" = [])),
    request_body = DashboardInput,
    responses(
        (status = 201, description = "Created", body = Dashboard)
    )
)]
pub async fn create_dashboard(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    let d: DashboardInput = json_body(&headers, &body)?;
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    let d = ctx.run(move |u| u.create_dashboard(&caller, &actor, d)).await??;
    Ok((StatusCode::CREATED, Json(d)))
}

/// One dashboard.
///
/// `GET /api/v1/dashboards/{id}`.
#[utoipa::path(
    get,
    path = "/api/v1/dashboards/{id}",
    operation_id = "getDashboard",
    tag = "dashboards",
    security(("session" = []), ("bearer" = [])),
    params(("id" = i64, Path, description = "The id.")),
    responses(
        (status = 200, description = "The dashboard", body = Dashboard)
    )
)]
pub async fn get_dashboard(ctx: Ctx, Path(id): Path<i64>) -> Result<impl IntoResponse, ApiError> {
    let caller = ctx.caller.clone();
    Ok(Json(ctx.run(move |u| u.get_dashboard(&caller, id)).await??))
}

/// Replace a dashboard (owner or admin; `version` must be current).
///
/// `PUT /api/v1/dashboards/{id}`.
#[utoipa::path(
    put,
    path = "/api/v1/dashboards/{id}",
    operation_id = "updateDashboard",
    tag = "dashboards",
    security(("session" = []), ("bearer" = [])),
    params(("id" = i64, Path, description = "The id.")),
    request_body = DashboardInput,
    responses(
        (status = 200, description = "The changed dashboard", body = Dashboard)
    )
)]
pub async fn update_dashboard(
    ctx: Ctx,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    let d: DashboardInput = json_body(&headers, &body)?;
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    Ok(Json(ctx.run(move |u| u.update_dashboard(&caller, &actor, id, d)).await??))
}

/// Delete a dashboard (owner or admin).
///
/// `DELETE /api/v1/dashboards/{id}`.
#[utoipa::path(
    delete,
    path = "/api/v1/dashboards/{id}",
    operation_id = "deleteDashboard",
    tag = "dashboards",
    security(("session" = []), ("bearer" = [])),
    params(("id" = i64, Path, description = "The id.")),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn delete_dashboard(ctx: Ctx, Path(id): Path<i64>) -> Result<StatusCode, ApiError> {
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    ctx.run(move |u| u.delete_dashboard(&caller, &actor, id)).await??;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct DataRequest {
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    panels: Option<Vec<String>>,
}

/// `POST /api/v1/dashboards/{id}/data` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct DashboardData {
    /// Each panel's result, by panel id.
    pub panels: BTreeMap<String, PanelResult>,
}

/// One panel's result: its search, its aggregation, or why it failed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum PanelResult {
    /// A panel without `aggs`.
    Search {
        /// The search's first page.
        search: SearchResponse,
    },
    /// A panel with `aggs`.
    Aggregate {
        /// The aggregations.
        aggregate: AggregateResponse,
    },
    /// The panel failed (the other panels still answer).
    Error(ErrorBody),
}

fn panel_error(e: ApiError) -> PanelResult {
    let message = match &e {
        ApiError::Internal(_) => "internal error (see the node's log)".to_string(),
        other => other.to_string(),
    };
    if let ApiError::Internal(detail) = &e {
        tracing::error!(error = %detail, "dashboard panel failed");
    }
    PanelResult::Error(e.body(message))
}

/// Run the panels as the caller.
///
/// `POST /api/v1/dashboards/{id}/data`: each panel's results, as the caller.
#[utoipa::path(
    post,
    path = "/api/v1/dashboards/{id}/data",
    operation_id = "dashboardData",
    tag = "dashboards",
    security(("session" = []), ("bearer" = [])),
    params(("id" = i64, Path, description = "The id.")),
    request_body = DataRequest,
    responses(
        (status = 200, description = "Each panel\'s result", body = DashboardData)
    )
)]
pub async fn dashboard_data(
    ctx: Ctx,
    State(s): State<ApiState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<DashboardData>, ApiError> {
    let req: DataRequest =
        if body.iter().all(u8::is_ascii_whitespace) { DataRequest::default() } else { json_body(&headers, &body)? };
    let caller = ctx.caller.clone();
    let d = ctx.run(move |u| u.get_dashboard(&caller, id)).await??;
    let backend = s.backend.get().ok_or(ApiError::NoStore)?;
    let principal = ctx.caller.principal();
    let from = req.from.or(d.time.from.clone());
    let to = req.to.or(d.time.to.clone());
    let now = sluice_core::event::now_ns();
    let mut out = BTreeMap::new();
    for p in &d.panels {
        if req.panels.as_ref().is_some_and(|want| !want.contains(&p.id)) {
            continue;
        }
        let result = match &p.aggs {
            Some(aggs) => {
                let r =
                    AggregateRequest { query: p.query.clone(), from: from.clone(), to: to.clone(), aggs: aggs.clone() };
                match r.parse(now) {
                    Ok(a) => match backend.aggregate(&principal, &a).await {
                        Ok(aggregate) => PanelResult::Aggregate { aggregate },
                        Err(e) => panel_error(e.into()),
                    },
                    Err(e) => panel_error(e.into()),
                }
            }
            None => {
                let r = SearchRequest {
                    query: p.query.clone(),
                    from: from.clone(),
                    to: to.clone(),
                    size: p.size.unwrap_or(50),
                    search_after: None,
                    fields: p.fields.clone(),
                    order: Default::default(),
                    sort: None,
                };
                match r.parse(now) {
                    Ok(q) => match backend.search(&principal, &q).await {
                        Ok(search) => PanelResult::Search { search },
                        Err(e) => panel_error(e.into()),
                    },
                    Err(e) => panel_error(e.into()),
                }
            }
        };
        out.insert(p.id.clone(), result);
    }
    tracing::debug!(principal = %principal.name, dashboard = id, panels = out.len(), "api: dashboard data");
    Ok(Json(DashboardData { panels: out }))
}

/// Saved searches the caller may see.
///
/// `GET /api/v1/saved-searches`.
#[utoipa::path(
    get,
    path = "/api/v1/saved-searches",
    operation_id = "listSavedSearches",
    tag = "saved-searches",
    security(("session" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "The visible saved searches", body = SavedSearchList)
    )
)]
pub async fn list_saved(ctx: Ctx) -> Result<Json<SavedSearchList>, ApiError> {
    let caller = ctx.caller.clone();
    let list = ctx.run(move |u| u.list_saved_searches(&caller)).await??;
    Ok(Json(SavedSearchList { saved_searches: list }))
}

/// Save a search.
///
/// `POST /api/v1/saved-searches`.
#[utoipa::path(
    post,
    path = "/api/v1/saved-searches",
    operation_id = "createSavedSearch",
    tag = "saved-searches",
    security(("session" = []), ("bearer" = [])),
    request_body = SavedSearchInput,
    responses(
        (status = 201, description = "Created", body = SavedSearch)
    )
)]
pub async fn create_saved(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    let s: SavedSearchInput = json_body(&headers, &body)?;
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    let s = ctx.run(move |u| u.create_saved_search(&caller, &actor, s)).await??;
    Ok((StatusCode::CREATED, Json(s)))
}

/// One saved search.
///
/// `GET /api/v1/saved-searches/{id}`.
#[utoipa::path(
    get,
    path = "/api/v1/saved-searches/{id}",
    operation_id = "getSavedSearch",
    tag = "saved-searches",
    security(("session" = []), ("bearer" = [])),
    params(("id" = i64, Path, description = "The id.")),
    responses(
        (status = 200, description = "The saved search", body = SavedSearch)
    )
)]
pub async fn get_saved(ctx: Ctx, Path(id): Path<i64>) -> Result<impl IntoResponse, ApiError> {
    let caller = ctx.caller.clone();
    Ok(Json(ctx.run(move |u| u.get_saved_search(&caller, id)).await??))
}

/// Replace a saved search (owner or admin; `version`).
///
/// `PUT /api/v1/saved-searches/{id}`.
#[utoipa::path(
    put,
    path = "/api/v1/saved-searches/{id}",
    operation_id = "updateSavedSearch",
    tag = "saved-searches",
    security(("session" = []), ("bearer" = [])),
    params(("id" = i64, Path, description = "The id.")),
    request_body = SavedSearchInput,
    responses(
        (status = 200, description = "The changed saved search", body = SavedSearch)
    )
)]
pub async fn update_saved(
    ctx: Ctx,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    let s: SavedSearchInput = json_body(&headers, &body)?;
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    Ok(Json(ctx.run(move |u| u.update_saved_search(&caller, &actor, id, s)).await??))
}

/// Delete a saved search.
///
/// `DELETE /api/v1/saved-searches/{id}`.
#[utoipa::path(
    delete,
    path = "/api/v1/saved-searches/{id}",
    operation_id = "deleteSavedSearch",
    tag = "saved-searches",
    security(("session" = []), ("bearer" = [])),
    params(("id" = i64, Path, description = "The id.")),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn delete_saved(ctx: Ctx, Path(id): Path<i64>) -> Result<StatusCode, ApiError> {
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    ctx.run(move |u| u.delete_saved_search(&caller, &actor, id)).await??;
    Ok(StatusCode::NO_CONTENT)
}
