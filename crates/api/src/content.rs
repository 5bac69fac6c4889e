//! Dashboards and saved searches (`docs/specs/ui-api.md` §9–10), and
//! `POST /api/v1/dashboards/{id}/data`, which runs a dashboard's panels as
//! the **caller's** principal — a dashboard shared by someone who sees more
//! shows each viewer only their own sources.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sluice_query::{AggregateRequest, SearchRequest};
use sluice_users::content::{DashboardInput, SavedSearchInput};

use crate::error::ApiError;
use crate::session::{json_body, Ctx};
use crate::ApiState;

/// `GET /api/v1/dashboards`: summaries of the visible ones.
pub async fn list_dashboards(ctx: Ctx) -> Result<Json<Value>, ApiError> {
    let caller = ctx.caller.clone();
    let list = ctx.run(move |u| u.list_dashboards(&caller)).await??;
    let list: Vec<Value> = list
        .into_iter()
        .map(|d| {
            json!({"id": d.id, "title": d.title, "description": d.description, "owner": d.owner,
                   "sharing": d.sharing, "version": d.version, "updated_at": d.updated_at, "can_edit": d.can_edit})
        })
        .collect();
    Ok(Json(json!({ "dashboards": list })))
}

/// `POST /api/v1/dashboards`.
pub async fn create_dashboard(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    let d: DashboardInput = json_body(&headers, &body)?;
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    let d = ctx.run(move |u| u.create_dashboard(&caller, &actor, d)).await??;
    Ok((StatusCode::CREATED, Json(d)))
}

/// `GET /api/v1/dashboards/{id}`.
pub async fn get_dashboard(ctx: Ctx, Path(id): Path<i64>) -> Result<impl IntoResponse, ApiError> {
    let caller = ctx.caller.clone();
    Ok(Json(ctx.run(move |u| u.get_dashboard(&caller, id)).await??))
}

/// `PUT /api/v1/dashboards/{id}`.
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

/// `DELETE /api/v1/dashboards/{id}`.
pub async fn delete_dashboard(ctx: Ctx, Path(id): Path<i64>) -> Result<StatusCode, ApiError> {
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    ctx.run(move |u| u.delete_dashboard(&caller, &actor, id)).await??;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DataRequest {
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    panels: Option<Vec<String>>,
}

fn error_json(e: ApiError) -> Value {
    let mut v = json!({"type": e.kind(), "message": match &e { ApiError::Internal(_) => "internal error (see the node's log)".to_string(), other => other.to_string() }});
    if let ApiError::QueryParse { position, .. } = &e {
        v["position"] = json!(position);
    }
    if let ApiError::Internal(detail) = &e {
        tracing::error!(error = %detail, "dashboard panel failed");
    }
    json!({ "error": v })
}

/// `POST /api/v1/dashboards/{id}/data`: each panel's results, as the caller.
pub async fn dashboard_data(
    ctx: Ctx,
    State(s): State<ApiState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let req: DataRequest =
        if body.iter().all(u8::is_ascii_whitespace) { DataRequest::default() } else { json_body(&headers, &body)? };
    let caller = ctx.caller.clone();
    let d = ctx.run(move |u| u.get_dashboard(&caller, id)).await??;
    let backend = s.backend.clone().ok_or(ApiError::NoStore)?;
    let principal = ctx.caller.principal();
    let from = req.from.or(d.time.from.clone());
    let to = req.to.or(d.time.to.clone());
    let now = sluice_core::event::now_ns();
    let mut out = Map::new();
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
                        Ok(resp) => json!({"aggregate": resp}),
                        Err(e) => error_json(e.into()),
                    },
                    Err(e) => error_json(e.into()),
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
                };
                match r.parse(now) {
                    Ok(q) => match backend.search(&principal, &q).await {
                        Ok(resp) => json!({"search": resp}),
                        Err(e) => error_json(e.into()),
                    },
                    Err(e) => error_json(e.into()),
                }
            }
        };
        out.insert(p.id.clone(), result);
    }
    tracing::debug!(principal = %principal.name, dashboard = id, panels = out.len(), "api: dashboard data");
    Ok(Json(json!({ "panels": out })))
}

/// `GET /api/v1/saved-searches`.
pub async fn list_saved(ctx: Ctx) -> Result<Json<Value>, ApiError> {
    let caller = ctx.caller.clone();
    let list = ctx.run(move |u| u.list_saved_searches(&caller)).await??;
    Ok(Json(json!({ "saved_searches": list })))
}

/// `POST /api/v1/saved-searches`.
pub async fn create_saved(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    let s: SavedSearchInput = json_body(&headers, &body)?;
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    let s = ctx.run(move |u| u.create_saved_search(&caller, &actor, s)).await??;
    Ok((StatusCode::CREATED, Json(s)))
}

/// `GET /api/v1/saved-searches/{id}`.
pub async fn get_saved(ctx: Ctx, Path(id): Path<i64>) -> Result<impl IntoResponse, ApiError> {
    let caller = ctx.caller.clone();
    Ok(Json(ctx.run(move |u| u.get_saved_search(&caller, id)).await??))
}

/// `PUT /api/v1/saved-searches/{id}`.
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

/// `DELETE /api/v1/saved-searches/{id}`.
pub async fn delete_saved(ctx: Ctx, Path(id): Path<i64>) -> Result<StatusCode, ApiError> {
    let (caller, actor) = (ctx.caller.clone(), ctx.actor());
    ctx.run(move |u| u.delete_saved_search(&caller, &actor, id)).await??;
    Ok(StatusCode::NO_CONTENT)
}
