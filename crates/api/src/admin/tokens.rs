//! API token endpoints (`docs/specs/ui-api.md` §7): list, create (the
//! secret is shown once) and revoke tokens. Own tokens for everyone; every
//! user's tokens, and admin-scoped ones, for admins.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::{Deserialize, Serialize};
use sluice_users::{ApiToken, TokenScope, UserType};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::session::{json_body, Ctx};

/// `GET /api/v1/tokens` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenList {
    /// The tokens, without their secrets.
    pub tokens: Vec<ApiToken>,
}

/// `POST /api/v1/tokens` response: the token and its secret, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedToken {
    /// The token.
    pub token: ApiToken,
    /// The bearer secret (`slt_…`); not stored, not shown again.
    pub secret: String,
}

/// `GET /api/v1/tokens` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TokenFilter {
    /// Admins: every user's tokens.
    #[serde(default)]
    all: bool,
}

/// Own API tokens (all with ?all=true, admin).
///
/// `GET /api/v1/tokens[?all=true]`.
#[utoipa::path(
    get,
    path = "/api/v1/tokens",
    operation_id = "listTokens",
    tag = "tokens",
    security(("session" = []), ("bearer" = [])),
    params(TokenFilter),
    responses(
        (status = 200, description = "The tokens (without secrets)", body = TokenList)
    )
)]
pub async fn list_tokens(ctx: Ctx, Query(f): Query<TokenFilter>) -> Result<Json<TokenList>, ApiError> {
    if f.all {
        ctx.require(UserType::Admin)?;
    }
    let owner = (!f.all).then(|| ctx.caller.username.clone());
    let tokens = ctx.run(move |u| u.list_tokens(owner.as_deref())).await??;
    Ok(Json(TokenList { tokens }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NewToken {
    name: String,
    scope: TokenScope,
    #[serde(default)]
    expires_in: Option<String>,
    #[serde(default)]
    owner: Option<String>,
}

/// Create an API token; the secret is shown once.
///
/// `POST /api/v1/tokens`.
#[utoipa::path(
    post,
    path = "/api/v1/tokens",
    operation_id = "createToken",
    tag = "tokens",
    security(("session" = []), ("bearer" = [])),
    request_body = NewToken,
    responses(
        (status = 201, description = "Created; the secret is shown once", body = CreatedToken)
    )
)]
pub async fn create_token(ctx: Ctx, headers: HeaderMap, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    let t: NewToken = json_body(&headers, &body)?;
    let owner = match t.owner {
        Some(o) if o != ctx.caller.username => {
            ctx.require(UserType::Admin)?;
            o
        }
        _ => ctx.caller.username.clone(),
    };
    if t.scope == TokenScope::Admin {
        ctx.require(UserType::Admin)?;
    }
    let expires: Option<Duration> = match t.expires_in.as_deref() {
        None => None,
        Some(s) => Some(
            sluice_core::config::HumanDuration::parse(s)
                .map_err(|m| ApiError::InvalidField { field: "expires_in".into(), message: m })?
                .0,
        ),
    };
    let actor = ctx.actor();
    let (token, secret) = ctx.run(move |u| u.create_token(&actor, &owner, &t.name, t.scope, expires)).await??;
    Ok((StatusCode::CREATED, Json(CreatedToken { token, secret })))
}

/// Revoke a token (own, or any as admin).
///
/// `DELETE /api/v1/tokens/{id}`: own tokens, or any as admin.
#[utoipa::path(
    delete,
    path = "/api/v1/tokens/{id}",
    operation_id = "revokeToken",
    tag = "tokens",
    security(("session" = []), ("bearer" = [])),
    params(("id" = i64, Path, description = "The id.")),
    responses(
        (status = 204, description = "Done")
    )
)]
pub async fn revoke_token(ctx: Ctx, Path(id): Path<i64>) -> Result<StatusCode, ApiError> {
    let owner = (!ctx.is_admin()).then(|| ctx.caller.username.clone());
    let actor = ctx.actor();
    ctx.run(move |u| u.revoke_token(&actor, id, owner.as_deref())).await??;
    Ok(StatusCode::NO_CONTENT)
}
