//! The API's errors and their HTTP form.
//!
//! Every error answers `{"error": {"type": …, "message": …}}` (plus
//! `"position"`, the byte offset into the query string, for
//! `query_parse_error`). The set of types is closed:
//!
//! | type                | status | when |
//! |---------------------|--------|------|
//! | `query_parse_error` | 400    | the query string does not parse |
//! | `time_error`        | 400    | `from` / `to` do not parse or the range is reversed |
//! | `invalid_request`   | 400    | bad JSON, an unknown key, a bad parameter |
//! | `bad_request`       | 400    | the store cannot run the request as given |
//! | `unauthorized`      | 401    | no or an unknown bearer token |
//! | `not_found`         | 404    | no such route |
//! | `no_store`          | 503    | this node has no search backend |
//! | `internal`          | 500    | the store failed (detail logged, not sent) |

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use sluice_query::api::RequestError;
use sluice_query::BackendError;

use crate::auth::AuthError;

/// An API error; converts into its JSON response.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The query string does not parse.
    #[error("{message}")]
    QueryParse {
        /// What is wrong.
        message: String,
        /// Byte offset into the query string.
        position: usize,
    },
    /// A time bound does not parse.
    #[error("{0}")]
    Time(String),
    /// Bad JSON, an unknown key, a bad parameter.
    #[error("{0}")]
    InvalidRequest(String),
    /// The backend refused the request.
    #[error("{0}")]
    BadRequest(String),
    /// Missing or invalid credentials.
    #[error("{0}")]
    Unauthorized(#[from] AuthError),
    /// No such route.
    #[error("{0}")]
    NotFound(String),
    /// No search backend on this node.
    #[error("this node has no search store")]
    NoStore,
    /// The backend failed.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The `type` in the body.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::QueryParse { .. } => "query_parse_error",
            Self::Time(_) => "time_error",
            Self::InvalidRequest(_) => "invalid_request",
            Self::BadRequest(_) => "bad_request",
            Self::Unauthorized(_) => "unauthorized",
            Self::NotFound(_) => "not_found",
            Self::NoStore => "no_store",
            Self::Internal(_) => "internal",
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::QueryParse { .. } | Self::Time(_) | Self::InvalidRequest(_) | Self::BadRequest(_) => {
                StatusCode::BAD_REQUEST
            }
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::NoStore => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<RequestError> for ApiError {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::Query(p) => Self::QueryParse { message: p.message, position: p.position },
            RequestError::Time(t) => Self::Time(t.0),
            RequestError::Invalid(m) => Self::InvalidRequest(m),
        }
    }
}

impl From<BackendError> for ApiError {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::BadRequest(m) => Self::BadRequest(m),
            BackendError::Internal(m) => Self::Internal(m),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = match &self {
            Self::Internal(detail) => {
                tracing::error!(error = %detail, "search backend failed");
                "internal error (see the node's log)".to_string()
            }
            other => other.to_string(),
        };
        let mut error = json!({"type": self.kind(), "message": message});
        if let Self::QueryParse { position, .. } = &self {
            error["position"] = json!(position);
        }
        let mut resp = (status, Json(json!({ "error": error }))).into_response();
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"sluice\""));
        }
        resp
    }
}
