//! How users-service and login errors map to API errors.

use sluice_users::{LoginError, UsersError};

use crate::auth::AuthError;
use crate::error::ApiError;

/// Maps a users-service error to the API's.
impl From<UsersError> for ApiError {
    fn from(e: UsersError) -> Self {
        match e {
            UsersError::NotFound(m) => Self::NotFound(m),
            UsersError::Conflict(m) => Self::Conflict(m),
            UsersError::Invalid { field: Some(field), message } => Self::InvalidField { field, message },
            UsersError::Invalid { field: None, message } => Self::InvalidRequest(message),
            UsersError::Forbidden(m) => Self::Forbidden(m),
            UsersError::Query { field, message, position } => {
                Self::QueryParse { message: format!("{field}: {message}"), position }
            }
            UsersError::BadCredentials(m) if m.contains("code") => Self::InvalidCode,
            UsersError::BadCredentials(_) => Self::InvalidCredentials,
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<LoginError> for ApiError {
    fn from(e: LoginError) -> Self {
        match e {
            LoginError::InvalidCredentials => Self::InvalidCredentials,
            LoginError::InvalidCode => Self::InvalidCode,
            LoginError::NoPendingLogin => Self::Unauthorized(AuthError::Session),
            LoginError::Locked { retry_after } => Self::Locked { retry_after },
            LoginError::RateLimited { retry_after } => Self::RateLimited { retry_after },
            LoginError::Internal(m) => Self::Internal(m),
        }
    }
}
