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
//! | `unauthorized`      | 401    | no or an unknown bearer token or session |
//! | `invalid_credentials` | 401  | login: wrong user name or password (same for unknown users) |
//! | `invalid_code`      | 401    | a wrong, reused or expired TOTP / recovery code |
//! | `forbidden`         | 403    | the user type or token scope does not allow it |
//! | `csrf_failed`       | 403    | session cookie without a valid `X-CSRF-Token` |
//! | `totp_enrollment_required` | 403 | the session may only enrol TOTP |
//! | `not_found`         | 404    | no such route, user, group, id |
//! | `conflict`          | 409    | name taken, stale version, last admin |
//! | `locked`            | 429    | login: too many failures for the name (`retry_after`) |
//! | `rate_limited`      | 429    | login: too many attempts from the address (`retry_after`) |
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
    Unauthorized(AuthError),
    /// A bad value in a named request key.
    #[error("{message}")]
    InvalidField {
        /// The key.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// Login: wrong name or password.
    #[error("invalid username or password")]
    InvalidCredentials,
    /// A wrong second factor.
    #[error("invalid or already used code")]
    InvalidCode,
    /// Not allowed.
    #[error("{0}")]
    Forbidden(String),
    /// CSRF check failed.
    #[error("missing or invalid X-CSRF-Token header")]
    Csrf,
    /// Only TOTP enrolment allowed.
    #[error("enrol two-factor authentication first (POST /api/v1/me/totp/enroll)")]
    EnrollmentRequired,
    /// A conflicting change.
    #[error("{0}")]
    Conflict(String),
    /// Login lockout.
    #[error("too many failed logins; try again later")]
    Locked {
        /// Seconds.
        retry_after: u64,
    },
    /// Login rate limit.
    #[error("too many login attempts; slow down")]
    RateLimited {
        /// Seconds.
        retry_after: u64,
    },
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
            Self::InvalidField { .. } => "invalid_request",
            Self::InvalidCredentials => "invalid_credentials",
            Self::InvalidCode => "invalid_code",
            Self::Forbidden(_) => "forbidden",
            Self::Csrf => "csrf_failed",
            Self::EnrollmentRequired => "totp_enrollment_required",
            Self::Conflict(_) => "conflict",
            Self::Locked { .. } => "locked",
            Self::RateLimited { .. } => "rate_limited",
            Self::NotFound(_) => "not_found",
            Self::NoStore => "no_store",
            Self::Internal(_) => "internal",
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::QueryParse { .. }
            | Self::Time(_)
            | Self::InvalidRequest(_)
            | Self::BadRequest(_)
            | Self::InvalidField { .. } => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) | Self::InvalidCredentials | Self::InvalidCode => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::Csrf | Self::EnrollmentRequired => StatusCode::FORBIDDEN,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Locked { .. } | Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::NoStore => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::Csrf => Self::Csrf,
            AuthError::EnrollmentRequired => Self::EnrollmentRequired,
            AuthError::Forbidden(m) => Self::Forbidden(m),
            AuthError::Internal(m) => Self::Internal(m),
            other => Self::Unauthorized(other),
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
                tracing::error!(error = %detail, "api: internal error");
                "internal error (see the node's log)".to_string()
            }
            other => other.to_string(),
        };
        let mut error = json!({"type": self.kind(), "message": message});
        if let Self::QueryParse { position, .. } = &self {
            error["position"] = json!(position);
        }
        if let Self::InvalidField { field, .. } = &self {
            error["field"] = json!(field);
        }
        let retry = match &self {
            Self::Locked { retry_after } | Self::RateLimited { retry_after } => Some(*retry_after),
            _ => None,
        };
        if let Some(r) = retry {
            error["retry_after"] = json!(r);
        }
        let mut resp = (status, Json(json!({ "error": error }))).into_response();
        if let Some(r) = retry {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(r));
        }
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"sluice\""));
        }
        resp
    }
}
