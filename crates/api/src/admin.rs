//! Administration endpoints (`docs/specs/ui-api.md` §4, §6, §7, §11, §12):
//! users, groups, assignments, API tokens, the audit log, LDAP and auth
//! settings, and node stats for operators. Each handler checks the caller's
//! type first; the users service writes the audit records.
//!
//! One file per job under `admin/`; everything is re-exported here, so the
//! router and the OpenAPI document name the handlers `admin::…`.

mod assignments;
mod audit;
mod groups;
mod ldap;
mod node;
mod policy;
mod tokens;
mod users;

pub use assignments::*;
pub use audit::*;
pub use groups::*;
pub use ldap::*;
pub use node::*;
pub use policy::*;
pub use tokens::*;
pub use users::*;
