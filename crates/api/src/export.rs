//! `GET /api/v1/export`: the hits of a search as a download, CSV (the chosen
//! columns) or ndjson (whole events), streamed page by page.
//!
//! The export is a search: the same request parsing, the same
//! [`SearchBackend::search`] with the caller's principal (the backend ANDs
//! the principal's source patterns into the query, so nothing is filtered
//! here after the fact), paged with its `search_after` cursor. The first page
//! runs before the response starts, so a bad query, time or cursor is a
//! plain `400` and a missing store a `503`; a page failing later ends the
//! body with an error (the client sees a broken transfer, never a short file
//! that looks complete) and is logged. At most `limit` hits are written
//! (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]); the `X-Sluice-Total`
//! header says how many matched in all.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde::Deserialize;
use serde_json::Value;
use sluice_query::api::Search;
use sluice_query::{Order, Principal, SearchBackend, SearchRequest, SearchResponse};

use crate::auth::Authenticated;
use crate::error::{ApiError, ErrorBody};
use crate::params::Params;
use crate::ApiState;

/// Hits written when the request names no `limit`.
pub const DEFAULT_LIMIT: usize = 10_000;
/// The largest `limit` accepted.
pub const MAX_LIMIT: usize = 1_000_000;
/// Hits asked of the backend per page.
const PAGE: usize = 1_000;
/// CSV columns when the request names no `fields`.
pub const DEFAULT_COLUMNS: &[&str] = &["@timestamp", "@group", "@subgroup", "@host", "@source", "message"];

/// The download formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// RFC 4180 CSV with a header row: one column per field.
    Csv,
    /// One JSON event per line, as search returns them.
    Ndjson,
}

impl Format {
    fn parse(s: Option<&str>) -> Result<Self, ApiError> {
        match s.unwrap_or("ndjson") {
            "csv" => Ok(Self::Csv),
            "ndjson" => Ok(Self::Ndjson),
            other => Err(ApiError::InvalidField {
                field: "format".into(),
                message: format!("format must be \"csv\" or \"ndjson\", got {other:?}"),
            }),
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Self::Csv => "text/csv; charset=utf-8",
            Self::Ndjson => "application/x-ndjson",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Ndjson => "ndjson",
        }
    }
}

/// `GET /api/v1/export` parameters: the search's (`query`, `from`, `to`,
/// `fields`, `order`) plus `format` and `limit`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportParams {
    /// The query string; empty means everything.
    #[serde(default)]
    query: String,
    /// Start of the time range (see [`SearchRequest::from`]).
    #[serde(default)]
    from: Option<String>,
    /// End of the time range.
    #[serde(default)]
    to: Option<String>,
    /// `csv` or `ndjson` (the default).
    #[serde(default)]
    format: Option<String>,
    /// Comma-separated field names: the CSV columns, the ndjson fields.
    #[serde(default)]
    fields: Option<String>,
    /// Most hits to write.
    #[serde(default)]
    limit: Option<usize>,
    /// Newest (default) or oldest first.
    #[serde(default)]
    order: Order,
    /// By a field instead of by time: `<field>:asc|desc` (as in search).
    #[serde(default)]
    sort: Option<String>,
}

/// What one export needs between pages.
struct Export {
    backend: Arc<dyn SearchBackend>,
    principal: Principal,
    search: Search,
    format: Format,
    /// CSV columns (empty for ndjson).
    columns: Vec<String>,
    /// Hits still to write.
    left: usize,
}

impl Export {
    /// The next page, asked for no more than is left.
    async fn page(&mut self) -> Result<SearchResponse, ApiError> {
        self.search.size = self.left.min(PAGE);
        Ok(self.backend.search(&self.principal, &self.search).await?)
    }

    /// Writes a page, and sets the cursor for the next one (`false`: done).
    fn write(&mut self, page: SearchResponse, out: &mut Vec<u8>) -> Result<bool, ApiError> {
        let n = page.hits.len().min(self.left);
        for hit in page.hits.iter().take(n) {
            match self.format {
                Format::Ndjson => {
                    serde_json::to_writer(&mut *out, &hit.event).map_err(|e| ApiError::Internal(e.to_string()))?;
                    out.push(b'\n');
                }
                Format::Csv => csv_row(out, self.columns.iter().map(|c| cell(&hit.event, c)))?,
            }
        }
        self.left -= n;
        self.search.search_after = page.next;
        Ok(self.left > 0 && n > 0 && self.search.search_after.is_some())
    }
}

/// A field's value as a CSV cell: strings as they are, other scalars as
/// JSON text, arrays and objects as JSON, missing and `null` empty. A name
/// with dots is looked up as a path when there is no such top-level key.
fn cell(event: &Value, name: &str) -> String {
    let v = event.get(name).or_else(|| name.split('.').try_fold(event, |v, k| v.get(k)));
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Appends one CSV record (quoted where RFC 4180 needs it, `\n` ended).
fn csv_row<I: IntoIterator<Item = S>, S: AsRef<[u8]>>(out: &mut Vec<u8>, cells: I) -> Result<(), ApiError> {
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(&mut *out);
    w.write_record(cells).map_err(|e| ApiError::Internal(format!("csv: {e}")))?;
    w.flush().map_err(|e| ApiError::Internal(format!("csv: {e}")))?;
    Ok(())
}

/// Download the hits of a search as CSV or ndjson, streamed page by page.
///
/// Runs as a search for the caller (the same permission filter, in the store). The first page runs before the response starts, so request errors get their status; a page failing later ends the body with an error. At most `limit` hits are written; `X-Sluice-Total` says how many matched.
///
/// `GET /api/v1/export?query=…&from=…&to=…&format=csv|ndjson&fields=a,b&limit=…&order=…`.
#[utoipa::path(
    get,
    path = "/api/v1/export",
    operation_id = "export",
    tag = "search",
    security(("bearer" = []), ("session" = [])),
    params(ExportParams),
    responses(
        (status = 200, description = "CSV (a header row of the fields, then one row per hit) or ndjson (one event per line)", body = String, content_type = "text/csv"),
        (status = 400, description = "`invalid_request` naming `format` or `limit` in `field`, `query_parse_error` (with `position`), `time_error`, or `bad_request`", body = ErrorBody),
        (status = 401, description = "`unauthorized`: no or an unknown bearer token (also when no tokens are configured)", body = ErrorBody),
        (status = 503, description = "`no_store`: this node has no search store", body = ErrorBody)
    )
)]
pub async fn export(
    Authenticated(principal): Authenticated,
    State(s): State<ApiState>,
    Params(p): Params<ExportParams>,
) -> Result<Response, ApiError> {
    let format = Format::parse(p.format.as_deref())?;
    let limit = p.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ApiError::InvalidField {
            field: "limit".into(),
            message: format!("limit must be between 1 and {MAX_LIMIT}, got {limit}"),
        });
    }
    let fields: Option<Vec<String>> =
        p.fields.map(|f| f.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect());
    let columns = match (format, &fields) {
        (Format::Csv, Some(f)) if !f.is_empty() => f.clone(),
        (Format::Csv, _) => DEFAULT_COLUMNS.iter().map(|c| c.to_string()).collect(),
        (Format::Ndjson, _) => Vec::new(),
    };
    let req = SearchRequest {
        query: p.query,
        from: p.from,
        to: p.to,
        size: PAGE,
        search_after: None,
        fields: fields.filter(|f| !f.is_empty()),
        order: p.order,
        sort: p.sort,
    };
    let search = req.parse(sluice_core::event::now_ns())?;
    let backend = s.backend.get().ok_or(ApiError::NoStore)?;
    let mut export = Export { backend, principal, search, format, columns, left: limit };

    // The first page before the response: its errors get their own status.
    let first = export.page().await?;
    let total = first.total;
    let mut head = Vec::new();
    if format == Format::Csv {
        csv_row(&mut head, &export.columns)?;
    }
    let more = export.write(first, &mut head)?;
    tracing::debug!(principal = %export.principal.name, total, limit, "api: export");

    let rest = futures_util::stream::unfold((export, more), |(mut export, more)| async move {
        if !more {
            return None;
        }
        let mut out = Vec::new();
        let step = match export.page().await {
            Ok(page) => export.write(page, &mut out),
            Err(e) => Err(e),
        };
        match step {
            Ok(more) => Some((Ok(Bytes::from(out)), (export, more))),
            Err(e) => {
                tracing::warn!(principal = %export.principal.name, error = %e, "api: export failed part-way");
                Some((Err(std::io::Error::other(e.to_string())), (export, false)))
            }
        }
    });
    let body = futures_util::stream::once(async { Ok::<_, std::io::Error>(Bytes::from(head)) }).chain(rest);
    let name = format!("sluice-export.{}", format.extension());
    let mut resp = Body::from_stream(body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(format.content_type()));
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.insert("x-sluice-total", HeaderValue::from(total));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cells_and_quoting() {
        let ev = json!({"a": "x,y", "b": "say \"hi\"", "c": 3, "d": ["p", "q"], "e": null, "f": {"g": "h"}, "m": "two\nlines"});
        let cells: Vec<String> =
            ["a", "b", "c", "d", "e", "f.g", "missing", "m"].iter().map(|c| cell(&ev, c)).collect();
        let mut out = Vec::new();
        csv_row(&mut out, &cells).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"x,y\",\"say \"\"hi\"\"\",3,\"[\"\"p\"\",\"\"q\"\"]\",,h,,\"two\nlines\"\n"
        );
    }

    #[test]
    fn formats() {
        assert_eq!(Format::parse(None).unwrap(), Format::Ndjson);
        assert_eq!(Format::parse(Some("csv")).unwrap(), Format::Csv);
        let e = Format::parse(Some("xlsx")).unwrap_err();
        assert_eq!(e.to_string(), "format must be \"csv\" or \"ndjson\", got \"xlsx\"");
    }
}
