//! Errors of the users service. Callers branch on the variant: the HTTP layer
//! maps each to one error type of `docs/specs/ui-api.md` §1.1.

/// A management operation failed.
#[derive(Debug, thiserror::Error)]
pub enum UsersError {
    /// No such user, group, id (or not visible to the caller).
    #[error("{0}")]
    NotFound(String),
    /// The name is taken, the version is stale, the last admin would go.
    #[error("{0}")]
    Conflict(String),
    /// A bad value; `field` names the request key when there is one.
    #[error("{message}")]
    Invalid {
        /// The offending key (`new_password`, `panels[1].query`).
        field: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// Allowed to see, not to change.
    #[error("{0}")]
    Forbidden(String),
    /// A query string in a panel or saved search does not parse.
    #[error("{field}: {message}")]
    Query {
        /// `panels[1].query`.
        field: String,
        /// The parser's message.
        message: String,
        /// Byte offset.
        position: usize,
    },
    /// A wrong current password or second factor in a self-service call.
    #[error("{0}")]
    BadCredentials(String),
    /// The database failed.
    #[error("metadata database: {0}")]
    Db(#[from] rusqlite::Error),
    /// The database is newer than this binary or a stored value is corrupt.
    #[error("metadata database {path}: {message}")]
    Corrupt {
        /// The database file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Anything else internal (hashing, randomness, LDAP set-up).
    #[error("{0}")]
    Internal(String),
}

impl UsersError {
    /// A value error without a field.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid { field: None, message: message.into() }
    }

    /// A value error naming its field.
    pub fn field(field: &str, message: impl Into<String>) -> Self {
        Self::Invalid { field: Some(field.to_string()), message: message.into() }
    }
}

/// Why a login or second-factor step failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginError {
    /// Wrong name or password, unknown or disabled user, LDAP bind refused.
    #[error("invalid username or password")]
    InvalidCredentials,
    /// Wrong, reused or expired TOTP / recovery code.
    #[error("invalid or already used code")]
    InvalidCode,
    /// No pending login (or it expired).
    #[error("no login in progress (or it expired); log in again")]
    NoPendingLogin,
    /// Too many failures for this name.
    #[error("too many failed logins; try again later")]
    Locked {
        /// Seconds until the lock ends.
        retry_after: u64,
    },
    /// Too many attempts from this address.
    #[error("too many login attempts; slow down")]
    RateLimited {
        /// Seconds until the next attempt is allowed.
        retry_after: u64,
    },
    /// The server failed (detail logged).
    #[error("internal error: {0}")]
    Internal(String),
}

/// Why a session or token does not authenticate a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    /// Unknown session id or token.
    #[error("unknown or revoked credentials")]
    Unknown,
    /// Idle or absolute timeout, token expiry.
    #[error("session or token expired")]
    Expired,
    /// The owner is disabled.
    #[error("user disabled")]
    Disabled,
    /// A second factor is still pending.
    #[error("second factor pending")]
    Pending,
    /// The server failed.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<rusqlite::Error> for AuthFailure {
    fn from(e: rusqlite::Error) -> Self {
        Self::Internal(e.to_string())
    }
}

impl From<rusqlite::Error> for LoginError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Internal(e.to_string())
    }
}

impl From<UsersError> for LoginError {
    fn from(e: UsersError) -> Self {
        Self::Internal(e.to_string())
    }
}
