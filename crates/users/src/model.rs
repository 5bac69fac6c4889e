//! The records the API returns and takes: users and their types, groups,
//! assignments, API tokens, audit records, sharing. They serialize exactly as
//! `docs/specs/ui-api.md` shows them, so the HTTP layer passes them through.

use serde::{Deserialize, Serialize};
use sluice_query::SourcePattern;

/// What a user may do besides reading their assigned logs (see
/// `docs/specs/ui-api.md` §1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UserType {
    /// Reads the logs assigned to them; own dashboards, searches, tokens.
    Viewer,
    /// A viewer who also sees the node operations pages.
    Operator,
    /// Manages users, groups, assignments, settings; reads the audit log.
    Admin,
}

impl UserType {
    /// The name stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Operator => "operator",
            Self::Admin => "admin",
        }
    }

    /// Parses the stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "viewer" => Some(Self::Viewer),
            "operator" => Some(Self::Operator),
            "admin" => Some(Self::Admin),
            _ => None,
        }
    }

    /// The `permissions` list of `GET /api/v1/me`.
    pub fn permissions(self) -> Vec<&'static str> {
        let mut p = vec![perm::LOGS_READ];
        if self >= Self::Operator {
            p.push(perm::OPERATIONS_READ);
        }
        if self == Self::Admin {
            p.extend([perm::USERS_MANAGE, perm::SETTINGS_MANAGE, perm::AUDIT_READ]);
        }
        p
    }
}

/// Permission names.
pub mod perm {
    /// Search, aggregate, fields, tail over assigned sources.
    pub const LOGS_READ: &str = "logs:read";
    /// Node operations pages.
    pub const OPERATIONS_READ: &str = "operations:read";
    /// Users, groups, assignments, tokens of others.
    pub const USERS_MANAGE: &str = "users:manage";
    /// LDAP and auth settings.
    pub const SETTINGS_MANAGE: &str = "settings:manage";
    /// The audit log.
    pub const AUDIT_READ: &str = "audit:read";
}

/// Where a user's password is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UserSource {
    /// argon2id hash in the metadata database.
    Local,
    /// Bind against the LDAP server.
    Ldap,
}

impl UserSource {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Ldap => "ldap",
        }
    }
}

/// TOTP state of a user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TotpStatus {
    /// Enrolled and active.
    pub enabled: bool,
    /// Their type or a group requires it.
    pub required: bool,
    /// Unused recovery codes.
    pub recovery_codes_left: u32,
}

/// A user as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct User {
    /// Lower-case login name.
    pub username: String,
    /// Free text.
    pub display_name: String,
    /// Type.
    #[serde(rename = "type")]
    pub user_type: UserType,
    /// Local or LDAP.
    pub source: UserSource,
    /// Disabled users cannot log in; their tokens stop working.
    pub disabled: bool,
    /// Groups (manual and LDAP memberships), sorted.
    pub groups: Vec<String>,
    /// Two-factor state.
    pub totp: TotpStatus,
    /// RFC 3339 when the login lockout ends, if locked.
    #[schema(required = true)]
    pub locked_until: Option<String>,
    /// Last successful login.
    #[schema(required = true)]
    pub last_login: Option<String>,
    /// Created.
    pub created_at: String,
    /// Last changed.
    pub updated_at: String,
    /// The password is the generated one printed when the first
    /// administrator was created; the UI asks to replace it until it is.
    pub password_one_time: bool,
}

/// A group as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Group {
    /// Name.
    pub name: String,
    /// Free text.
    pub description: String,
    /// Members must use TOTP.
    pub require_totp: bool,
    /// Manual members.
    pub members: Vec<String>,
    /// Members through the LDAP group mapping.
    pub ldap_members: Vec<String>,
    /// Created.
    pub created_at: String,
    /// Last changed.
    pub updated_at: String,
}

/// Who an assignment is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    /// `user` or `group`.
    pub kind: SubjectKind,
    /// User or group name.
    pub name: String,
}

/// See [`Subject`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubjectKind {
    /// A user.
    User,
    /// A group.
    Group,
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            SubjectKind::User => write!(f, "user:{}", self.name),
            SubjectKind::Group => write!(f, "group:{}", self.name),
        }
    }
}

/// Sources a user or group may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Assignment {
    /// Id.
    pub id: i64,
    /// For whom.
    pub subject: Subject,
    /// What.
    pub pattern: SourcePattern,
    /// Created.
    pub created_at: String,
    /// By whom.
    pub created_by: String,
}

/// What an API token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TokenScope {
    /// Read-only: `GET`s, search, aggregate, dashboard data.
    Search,
    /// Everything its owner may do.
    Admin,
}

impl TokenScope {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Search => "search",
            Self::Admin => "admin",
        }
    }
}

/// An API token (without its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApiToken {
    /// Id.
    pub id: i64,
    /// Label.
    pub name: String,
    /// Owner user name.
    pub owner: String,
    /// Scope.
    pub scope: TokenScope,
    /// Created.
    pub created_at: String,
    /// Expiry, if any.
    #[schema(required = true)]
    pub expires_at: Option<String>,
    /// Last authenticated request (updated at most once a minute).
    #[schema(required = true)]
    pub last_used_at: Option<String>,
}

/// Who shares a dashboard or saved search.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Sharing {
    /// Visible to every user.
    #[serde(default)]
    pub everyone: bool,
    /// Visible to members of these groups.
    #[serde(default)]
    pub groups: Vec<String>,
}

/// One audit record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AuditRecord {
    /// Id (increasing).
    pub id: i64,
    /// When.
    pub time: String,
    /// Who (user name, token owner, `cli:<unix user>`, the typed name of a failed login).
    pub actor: String,
    /// `user`, `token`, `cli`, `system`, `anonymous`.
    pub actor_kind: String,
    /// What, e.g. `user.create`.
    pub action: String,
    /// On what, e.g. `bob`, `group:acme`.
    pub target: String,
    /// Details (JSON object).
    pub detail: serde_json::Value,
    /// `success` or `failure`.
    pub outcome: String,
    /// Client address.
    #[schema(required = true)]
    pub ip: Option<String>,
    /// Client user agent.
    #[schema(required = true)]
    pub user_agent: Option<String>,
}

/// Checks a user name (already lower-cased).
pub fn check_username(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._@-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid user name {name:?}: 1-64 characters a-z, 0-9, '.', '_', '@', '-', starting with a letter or digit"
        ))
    }
}

/// Lower-cases and trims a user name as typed.
pub fn normalize_username(name: &str) -> String {
    name.trim().to_lowercase()
}

/// Checks a group name.
pub fn check_group_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid group name {name:?}: 1-64 characters A-Z, a-z, 0-9, '.', '_', '-', starting with a letter or digit"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_username("alice").is_ok());
        assert!(check_username("a.b_c@d-e").is_ok());
        assert!(check_username("Alice").is_err());
        assert!(check_username("").is_err());
        assert!(check_username("-x").is_err());
        assert!(check_username(&"a".repeat(65)).is_err());
        assert_eq!(normalize_username("  Alice "), "alice");
        assert!(check_group_name("ACME-ops").is_ok());
        assert!(check_group_name("a b").is_err());
    }

    #[test]
    fn permissions_by_type() {
        assert_eq!(UserType::Viewer.permissions(), ["logs:read"]);
        assert_eq!(UserType::Operator.permissions(), ["logs:read", "operations:read"]);
        assert_eq!(
            UserType::Admin.permissions(),
            ["logs:read", "operations:read", "users:manage", "settings:manage", "audit:read"]
        );
        assert!(UserType::Admin > UserType::Operator && UserType::Operator > UserType::Viewer);
    }
}
