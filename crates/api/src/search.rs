//! The search endpoints: `/api/v1/search`, `/aggregate`, `/fields` and the
//! live `/tail` (Server-Sent Events).
//!
//! Each handler authenticates first (`401` before anything else), parses and
//! validates the request with `sluice-query` (current time for relative
//! bounds), then hands it with the caller's principal to the node's
//! [`SearchBackend`]; `503 no_store` when the node has none. The backend ANDs
//! the principal's source patterns into every query itself.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::IntoResponse;
use axum::Json;
use futures_util::stream::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use sluice_query::{
    AggregateRequest, AggregateResponse, FieldInfo, FieldsRequest, SearchBackend, SearchRequest, SearchResponse,
    TailRequest,
};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Authenticated;
use crate::error::{ApiError, ErrorBody};
use crate::params::Params;
use crate::ApiState;

/// The errors every search endpoint answers (besides the `default` of
/// [`crate::openapi::document`]).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum SearchErrors {
    /// `query_parse_error` (with `position`), `time_error`, `invalid_request` (bad JSON, an unknown key — named
    /// in the message) or `bad_request` (the store cannot run it).
    #[response(status = 400)]
    BadRequest(#[to_schema] ErrorBody),
    /// `unauthorized`: no or an unknown bearer token (also when no tokens are configured).
    #[response(status = 401)]
    Unauthorized(#[to_schema] ErrorBody),
    /// `internal`: the store failed; details are in the node's log.
    #[response(status = 500)]
    Internal(#[to_schema] ErrorBody),
    /// `no_store`: this node has no search store.
    #[response(status = 503)]
    NoStore(#[to_schema] ErrorBody),
}

/// Hits per page when `size` is not given (as in [`SearchRequest`]).
const DEFAULT_SIZE: usize = 100;

/// How often an idle tail sends a `: keep-alive` comment.
pub const TAIL_KEEP_ALIVE: Duration = Duration::from_secs(15);

fn backend(s: &ApiState) -> Result<Arc<dyn SearchBackend>, ApiError> {
    s.backend.get().ok_or(ApiError::NoStore)
}

/// A JSON body; an empty body is `{}`. Unknown keys are named in the error.
fn json_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) { &b"{}"[..] } else { body };
    serde_json::from_slice(body).map_err(|e| ApiError::InvalidRequest(format!("invalid request body: {e}")))
}

/// `GET /api/v1/search` parameters: [`SearchRequest`]'s names, `fields`
/// comma-separated.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// The query string; empty means everything.
    #[serde(default)]
    query: String,
    /// Start of the time range (inclusive): RFC 3339, epoch milliseconds or
    /// relative (`now-15m`).
    #[serde(default)]
    from: Option<String>,
    /// End of the time range (exclusive), same forms.
    #[serde(default)]
    to: Option<String>,
    /// Hits per page, 1 to 10000 (default 100).
    #[serde(default)]
    size: Option<usize>,
    /// The `next` cursor of the previous page.
    #[serde(default)]
    search_after: Option<String>,
    /// Comma-separated fields to return in each hit (the `@` identity fields
    /// are always there).
    #[serde(default)]
    fields: Option<String>,
    /// `newest` first (the default) or `oldest` first.
    #[serde(default)]
    order: sluice_query::Order,
    /// Sort by a field instead of by time: `<field>:asc` or `<field>:desc`;
    /// events without it last, ties newest first (see [`SearchRequest`]).
    #[serde(default)]
    sort: Option<String>,
}

impl From<SearchParams> for SearchRequest {
    fn from(p: SearchParams) -> Self {
        SearchRequest {
            query: p.query,
            from: p.from,
            to: p.to,
            size: p.size.unwrap_or(DEFAULT_SIZE),
            search_after: p.search_after,
            fields: p.fields.map(|f| f.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()),
            order: p.order,
            sort: p.sort,
        }
    }
}

/// `GET /api/v1/fields` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct FieldsResponse {
    /// The fields seen, by name.
    pub fields: Vec<FieldInfo>,
}

async fn run_search(
    s: &ApiState,
    principal: &sluice_query::Principal,
    req: SearchRequest,
) -> Result<impl IntoResponse, ApiError> {
    let search = req.parse(sluice_core::event::now_ns())?;
    let backend = backend(s)?;
    let resp = backend.search(principal, &search).await?;
    tracing::debug!(principal = %principal.name, total = resp.total, took_ms = resp.took_ms, "api: search");
    Ok(Json(resp))
}

/// A page of hits, newest first.
///
/// `GET /api/v1/search?query=…&from=…&to=…&size=…&search_after=…&fields=a,b&order=oldest&sort=field:desc`.
#[utoipa::path(
    get,
    path = "/api/v1/search",
    operation_id = "searchGet",
    tag = "search",
    security(("bearer" = []), ("session" = [])),
    params(SearchParams),
    responses(
        (status = 200, description = "Hits", body = SearchResponse),
        SearchErrors
    )
)]
pub async fn search_get(
    Authenticated(principal): Authenticated,
    State(s): State<ApiState>,
    Params(p): Params<SearchParams>,
) -> Result<impl IntoResponse, ApiError> {
    let req = SearchRequest::from(p);
    run_search(&s, &principal, req).await
}

/// A page of hits, newest first.
///
/// `POST /api/v1/search` with a [`SearchRequest`] body.
#[utoipa::path(
    post,
    path = "/api/v1/search",
    operation_id = "search",
    tag = "search",
    security(("bearer" = []), ("session" = [])),
    request_body = SearchRequest,
    responses(
        (status = 200, description = "Hits", body = SearchResponse),
        SearchErrors
    )
)]
pub async fn search_post(
    Authenticated(principal): Authenticated,
    State(s): State<ApiState>,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    let req: SearchRequest = json_body(&body)?;
    run_search(&s, &principal, req).await
}

/// Date histograms, top terms and numeric stats over the matching events.
///
/// `POST /api/v1/aggregate` with an [`AggregateRequest`] body.
#[utoipa::path(
    post,
    path = "/api/v1/aggregate",
    operation_id = "aggregate",
    tag = "search",
    security(("bearer" = []), ("session" = [])),
    request_body = AggregateRequest,
    responses(
        (status = 200, description = "Results by name", body = AggregateResponse),
        SearchErrors
    )
)]
pub async fn aggregate(
    Authenticated(principal): Authenticated,
    State(s): State<ApiState>,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    let req: AggregateRequest = json_body(&body)?;
    let agg = req.parse(sluice_core::event::now_ns())?;
    let backend = backend(&s)?;
    let resp = backend.aggregate(&principal, &agg).await?;
    tracing::debug!(principal = %principal.name, total = resp.total, took_ms = resp.took_ms, "api: aggregate");
    Ok(Json(resp))
}

/// Field names and types of the events in a time range the caller may read.
///
/// Every event in the range counts (the store's columns with a value in at least one of the caller's events), not a sample. Without `from` and `to`, all stored events.
///
/// `GET /api/v1/fields?from=…&to=…`: `{"fields": [{"name", "types"}]}` of
/// the caller's events in the range (unbounded without `from`/`to`).
#[utoipa::path(
    get,
    path = "/api/v1/fields",
    operation_id = "fields",
    tag = "search",
    security(("bearer" = []), ("session" = [])),
    params(sluice_query::FieldsRequest),
    responses(
        (status = 200, description = "The fields", body = FieldsResponse),
        SearchErrors
    )
)]
pub async fn fields(
    Authenticated(principal): Authenticated,
    State(s): State<ApiState>,
    Params(req): Params<FieldsRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let range = req.range(sluice_core::event::now_ns())?;
    let backend = backend(&s)?;
    let fields = backend.fields(&principal, &range).await?;
    Ok(Json(FieldsResponse { fields }))
}

/// Live tail: newly stored matching events as Server-Sent Events.
///
/// `GET /api/v1/tail?query=…`: an `: open` comment at once, then one
/// `data: <hit json>` event per new matching event and a keep-alive comment
/// every [`TAIL_KEEP_ALIVE`]; ends when the client disconnects (the backend's
/// stream is dropped with the response).
///
/// The opening comment is there for Firefox: its `fetch()` resolves only when
/// the first body bytes arrive, not with the headers, so without it a quiet
/// tail looked "connecting" for a whole keep-alive interval.
#[utoipa::path(
    get,
    path = "/api/v1/tail",
    operation_id = "tail",
    tag = "search",
    security(("bearer" = []), ("session" = [])),
    params(sluice_query::TailRequest),
    responses(
        (status = 200, description = "Server-Sent Events: an `: open` comment, then one `data: <Hit JSON>` per new matching event, `: keep-alive` comments", body = String, content_type = "text/event-stream"),
        SearchErrors
    )
)]
pub async fn tail(
    Authenticated(principal): Authenticated,
    State(s): State<ApiState>,
    Params(req): Params<TailRequest>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let query = sluice_query::parse(&req.query).map_err(sluice_query::api::RequestError::from)?;
    let backend = backend(&s)?;
    let rx = backend.tail(&principal, &query).await?;
    tracing::debug!(principal = %principal.name, "api: tail started");
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let hit = rx.recv().await?;
        let data = serde_json::to_string(&hit).unwrap_or_else(|_| "{}".into());
        Some((Ok(SseEvent::default().data(data)), rx))
    });
    let opened = futures_util::stream::once(async { Ok(SseEvent::default().comment("open")) });
    Ok(Sse::new(opened.chain(stream)).keep_alive(KeepAlive::new().interval(TAIL_KEEP_ALIVE).text("keep-alive")))
}
