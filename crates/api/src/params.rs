//! [`Params`]: a handler's query-string parameters, a malformed query string
//! answered as the API's `invalid_request` (axum's own message, which names
//! the parameter) instead of axum's plain-text rejection.

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The query-string parameters `T` of a request.
#[derive(Debug, Clone)]
pub struct Params<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(t)| Self(t))
            .map_err(|e| ApiError::InvalidRequest(e.body_text()))
    }
}
