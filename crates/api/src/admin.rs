//! Administration endpoints (`docs/specs/ui-api.md` §4, §6, §7, §11, §12):
//! users, groups, assignments, API tokens, the audit log, LDAP and auth
//! settings, and node stats for operators. Each handler checks the caller's
//! type first; the users service writes the audit records.
//!
//! Three files under `admin/`: `accounts.rs` (users and groups),
//! `access.rs` (assignments, API tokens, the audit log) and `settings.rs`
//! (auth policy, LDAP settings, node stats); everything is re-exported here, so the
//! router and the OpenAPI document name the handlers `admin::…`.

use axum::http::HeaderMap;
use serde::de::DeserializeOwned;
use sluice_users::{Actor, UserType, Users, UsersError};

use crate::error::ApiError;
use crate::session::{json_body, Ctx};

mod access;
mod accounts;
mod settings;

pub use access::*;
pub use accounts::*;
pub use settings::*;

impl Ctx {
    /// Runs a users-service call as an admin: `403` unless the caller is
    /// one, then `f` with the audit actor on a blocking thread.
    async fn admin<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Users, &Actor) -> Result<T, UsersError> + Send + 'static,
    ) -> Result<T, ApiError> {
        self.require(UserType::Admin)?;
        let actor = self.actor();
        Ok(self.run(move |u| f(u, &actor)).await??)
    }

    /// [`Ctx::admin`] with a JSON request body, read after the type check
    /// (a caller who is not an admin gets `403` whatever the body).
    async fn admin_with<B: DeserializeOwned + Send + 'static, T: Send + 'static>(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        f: impl FnOnce(&Users, &Actor, B) -> Result<T, UsersError> + Send + 'static,
    ) -> Result<T, ApiError> {
        self.require(UserType::Admin)?;
        let b: B = json_body(headers, body)?;
        let actor = self.actor();
        Ok(self.run(move |u| f(u, &actor, b)).await??)
    }
}
