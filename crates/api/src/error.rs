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
use serde::Serialize;
use sluice_query::api::RequestError;
use sluice_query::BackendError;

use utoipa::ToSchema;

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

/// The closed set of error types (the `type` of an [`ErrorBody`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorType {
    /// The query string does not parse (400).
    QueryParseError,
    /// `from` / `to` do not parse or the range is reversed (400).
    TimeError,
    /// Bad JSON, an unknown key, a bad parameter (400).
    InvalidRequest,
    /// The store cannot run the request as given (400).
    BadRequest,
    /// No or an unknown bearer token or session (401).
    Unauthorized,
    /// Login: wrong user name or password (401).
    InvalidCredentials,
    /// A wrong, reused or expired TOTP / recovery code (401).
    InvalidCode,
    /// The user type or token scope does not allow it (403).
    Forbidden,
    /// Session cookie without a valid `X-CSRF-Token` (403).
    CsrfFailed,
    /// The session may only enrol TOTP (403).
    TotpEnrollmentRequired,
    /// Name taken, stale version, last admin (409).
    Conflict,
    /// Login: too many failures for the name (429).
    Locked,
    /// Login: too many attempts from the address (429).
    RateLimited,
    /// No such route, user, group, id (404).
    NotFound,
    /// This node has no search backend (503).
    NoStore,
    /// The store failed; detail logged, not sent (500).
    Internal,
}

/// Every error's JSON body: `{"error": {"type", "message", …}}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// The `error` of an [`ErrorBody`].
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// What kind of error.
    #[serde(rename = "type")]
    pub kind: ErrorType,
    /// What is wrong, for a human.
    pub message: String,
    /// Byte offset into the query string (`query_parse_error` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub position: Option<usize>,
    /// The offending request key (`invalid_request`), e.g. `new_password`, `panels[1].query`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub field: Option<String>,
    /// Seconds (`locked`, `rate_limited`; also the `Retry-After` header).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// The `type` in the body.
    pub fn kind(&self) -> ErrorType {
        match self {
            Self::QueryParse { .. } => ErrorType::QueryParseError,
            Self::Time(_) => ErrorType::TimeError,
            Self::InvalidRequest(_) => ErrorType::InvalidRequest,
            Self::BadRequest(_) => ErrorType::BadRequest,
            Self::Unauthorized(_) => ErrorType::Unauthorized,
            Self::InvalidField { .. } => ErrorType::InvalidRequest,
            Self::InvalidCredentials => ErrorType::InvalidCredentials,
            Self::InvalidCode => ErrorType::InvalidCode,
            Self::Forbidden(_) => ErrorType::Forbidden,
            Self::Csrf => ErrorType::CsrfFailed,
            Self::EnrollmentRequired => ErrorType::TotpEnrollmentRequired,
            Self::Conflict(_) => ErrorType::Conflict,
            Self::Locked { .. } => ErrorType::Locked,
            Self::RateLimited { .. } => ErrorType::RateLimited,
            Self::NotFound(_) => ErrorType::NotFound,
            Self::NoStore => ErrorType::NoStore,
            Self::Internal(_) => ErrorType::Internal,
        }
    }

    /// The JSON body (`{"error": {...}}`), with `message` as given.
    pub fn body(&self, message: String) -> ErrorBody {
        let retry_after = match self {
            Self::Locked { retry_after } | Self::RateLimited { retry_after } => Some(*retry_after),
            _ => None,
        };
        ErrorBody {
            error: ErrorDetail {
                kind: self.kind(),
                message,
                position: match self {
                    Self::QueryParse { position, .. } => Some(*position),
                    _ => None,
                },
                field: match self {
                    Self::InvalidField { field, .. } => Some(field.clone()),
                    _ => None,
                },
                retry_after,
            },
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
        let body = self.body(message);
        let retry = body.error.retry_after;
        let mut resp = (status, Json(body)).into_response();
        if let Some(r) = retry {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(r));
        }
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"sluice\""));
        }
        resp
    }
}
