//! `GET /api/v1/context`: the events around one event from the same host and
//! source — `n` before and `n` after it in search order (event time, then the
//! order the store received them in), like `grep -C`.
//!
//! Two searches through the node's [`SearchBackend`] as the caller (so only
//! events the caller may read, filtered in the store): newest first up to the
//! event's timestamp, and oldest first from it, both for `@host` and
//! `@source` equal to the event's (an event without `@host` — the `http`
//! source sets none — is matched on `@source` alone; `@source` names the
//! sending connection, e.g. `http:10.0.0.5:40112`). Each walks past the events of the same
//! timestamp until it meets the event itself (by `id`), then takes `n`; an
//! event the caller cannot see (or that does not exist at `at`) is a `404`.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use sluice_query::api::Search;
use sluice_query::{Hit, Order, Principal, SearchBackend, TimeRange};

use crate::auth::Authenticated;
use crate::error::{ApiError, ErrorBody};
use crate::params::Params;
use crate::ApiState;

/// Neighbours on each side when the request names no `n`.
pub const DEFAULT_N: usize = 10;
/// The largest `n`.
pub const MAX_N: usize = 500;
/// Hits of the same timestamp walked past, per side, looking for the event.
const MAX_TIES: usize = 10_000;

/// `GET /api/v1/context` parameters.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ContextParams {
    /// The event's `id` (from a search hit).
    id: String,
    /// The event's `@timestamp`.
    at: String,
    /// Its `@host` (events without one: leave it out).
    #[serde(default)]
    host: Option<String>,
    /// Its `@source` (likewise).
    #[serde(default)]
    source: Option<String>,
    /// Events on each side.
    #[serde(default)]
    n: Option<usize>,
}

/// The answer: both sides in time order (oldest first), and the event.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ContextResponse {
    /// The `n` events before it (fewer at the start of the data).
    pub before: Vec<Hit>,
    /// The event itself.
    pub event: Hit,
    /// The `n` events after it.
    pub after: Vec<Hit>,
}

/// One side: the `n` hits after `id` in `search`'s order, and the hit `id`.
async fn side(
    backend: &Arc<dyn SearchBackend>,
    principal: &Principal,
    mut search: Search,
    id: &str,
    n: usize,
) -> Result<(Vec<Hit>, Option<Hit>), ApiError> {
    let mut anchor = None;
    let mut out = Vec::new();
    let mut walked = 0;
    loop {
        let page = backend.search(principal, &search).await?;
        for hit in page.hits {
            if anchor.is_some() {
                if out.len() == n {
                    return Ok((out, anchor));
                }
                out.push(hit);
            } else if hit.id == id {
                anchor = Some(hit);
            } else {
                walked += 1;
            }
        }
        if (anchor.is_some() && out.len() == n) || walked > MAX_TIES {
            break;
        }
        match page.next {
            Some(c) => search.search_after = Some(c),
            None => break,
        }
    }
    Ok((out, anchor))
}

fn term(field: &str, value: String) -> sluice_query::Query {
    sluice_query::Query::Term { field: Some(field.into()), value }
}

/// The events around one event from the same host and source.
///
/// `n` events before and `n` after the event in search order (event time, then the order received), from events with the same `@host` and `@source` that the caller may read (filtered in the store). Pass the event's `id`, `@timestamp`, `@host` and `@source` from a search hit.
///
/// `GET /api/v1/context?id=…&at=…&host=…&source=…&n=…`.
#[utoipa::path(
    get,
    path = "/api/v1/context",
    operation_id = "context",
    tag = "search",
    security(("bearer" = []), ("session" = [])),
    params(ContextParams),
    responses(
        (status = 200, description = "The event and its neighbours", body = ContextResponse),
        (status = 400, description = "`invalid_request`: a missing parameter, or `n` / `at` out of range (named in `field`)", body = ErrorBody),
        (status = 401, description = "`unauthorized`: no or an unknown bearer token (also when no tokens are configured)", body = ErrorBody),
        (status = 404, description = "`not_found`: no such event at `at` that the caller may read", body = ErrorBody),
        (status = 503, description = "`no_store`: this node has no search store", body = ErrorBody)
    )
)]
pub async fn context(
    Authenticated(principal): Authenticated,
    State(s): State<ApiState>,
    Params(p): Params<ContextParams>,
) -> Result<Json<ContextResponse>, ApiError> {
    let n = p.n.unwrap_or(DEFAULT_N);
    if n == 0 || n > MAX_N {
        return Err(ApiError::InvalidField {
            field: "n".into(),
            message: format!("n must be between 1 and {MAX_N}, got {n}"),
        });
    }
    let at = sluice_query::time::parse_time(&p.at, sluice_core::event::now_ns())
        .map_err(|e| ApiError::InvalidField { field: "at".into(), message: e.0 })?;
    let backend = s.backend.get().ok_or(ApiError::NoStore)?;
    let terms: Vec<_> = [("@host", p.host), ("@source", p.source)]
        .into_iter()
        .filter_map(|(f, v)| v.filter(|v| !v.is_empty()).map(|v| term(f, v)))
        .collect();
    let query = if terms.is_empty() { sluice_query::Query::All } else { sluice_query::Query::And(terms) };
    // One page holds the event and its n neighbours unless many share its timestamp.
    let size = (n + 1).max(100);
    let before = Search {
        query: query.clone(),
        range: TimeRange { from_ns: None, to_ns: Some(at.saturating_add(1)) },
        size,
        search_after: None,
        fields: None,
        order: Order::Newest,
        sort: None,
    };
    let after = Search { range: TimeRange { from_ns: Some(at), to_ns: None }, order: Order::Oldest, ..before.clone() };
    let (mut before, anchor) = side(&backend, &principal, before, &p.id, n).await?;
    let (after, _) = side(&backend, &principal, after, &p.id, n).await?;
    let event = anchor.ok_or_else(|| ApiError::NotFound(format!("no event {:?} at {}", p.id, p.at)))?;
    before.reverse();
    tracing::debug!(principal = %principal.name, before = before.len(), after = after.len(), "api: context");
    Ok(Json(ContextResponse { before, event, after }))
}
