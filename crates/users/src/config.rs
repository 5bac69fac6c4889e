//! The `[auth]` section of the node config: where the metadata database
//! lives, session timeouts, lockout and rate-limit policy, which users must
//! use two-factor authentication, and the LDAP server.
//!
//! The section's presence turns user accounts on: without `[auth]` a node
//! serves only the static `[api.tokens]` and creates no database (agents
//! need none). Every struct rejects unknown keys; [`AuthConfig::check`]
//! reports semantic errors with their key paths, as the rest of the config.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sluice_core::config::{ConfigError, HumanDuration};

use crate::model::UserType;

/// `[auth]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// The SQLite metadata database; relative paths are under `node.data_dir`.
    #[serde(default = "default_db")]
    pub db: PathBuf,
    /// `Secure` attribute on cookies: `"auto"` (when the request came over
    /// TLS, i.e. `X-Forwarded-Proto: https` from a TLS-terminating proxy),
    /// `"always"` or `"never"`.
    #[serde(default = "default_cookie_secure")]
    pub cookie_secure: String,
    /// Shortest accepted password for local users.
    #[serde(default = "default_password_min_length")]
    pub password_min_length: usize,
    /// `[auth.session]`.
    #[serde(default)]
    pub session: SessionConfig,
    /// `[auth.lockout]`.
    #[serde(default)]
    pub lockout: LockoutConfig,
    /// `[auth.login_rate]`.
    #[serde(default)]
    pub login_rate: LoginRateConfig,
    /// `[auth.totp]`.
    #[serde(default)]
    pub totp: TotpConfig,
    /// `[auth.ldap]`: an LDAP server to authenticate against. When set here it
    /// cannot be changed through the API.
    #[serde(default)]
    pub ldap: Option<LdapSettings>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            db: default_db(),
            cookie_secure: default_cookie_secure(),
            password_min_length: default_password_min_length(),
            session: SessionConfig::default(),
            lockout: LockoutConfig::default(),
            login_rate: LoginRateConfig::default(),
            totp: TotpConfig::default(),
            ldap: None,
        }
    }
}

fn default_db() -> PathBuf {
    PathBuf::from("users.db")
}
fn default_cookie_secure() -> String {
    "auto".into()
}
fn default_password_min_length() -> usize {
    12
}

/// `[auth.session]`: how long a login lasts.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionConfig {
    /// A session without a request for this long ends.
    #[serde(default = "default_idle")]
    pub idle_timeout: HumanDuration,
    /// A session ends this long after login, whatever happens.
    #[serde(default = "default_absolute")]
    pub absolute_timeout: HumanDuration,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self { idle_timeout: default_idle(), absolute_timeout: default_absolute() }
    }
}

fn default_idle() -> HumanDuration {
    HumanDuration(Duration::from_secs(30 * 60))
}
fn default_absolute() -> HumanDuration {
    HumanDuration(Duration::from_secs(12 * 3600))
}

/// `[auth.lockout]`: after `threshold` failed logins for one user name within
/// `window`, that name is refused for `duration` (known and unknown names
/// alike, so the answer does not reveal which exist).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockoutConfig {
    /// Failures that lock a name (0 disables lockout).
    #[serde(default = "default_threshold")]
    pub threshold: u32,
    /// Failures older than this are forgotten.
    #[serde(default = "default_lock_window")]
    pub window: HumanDuration,
    /// How long a locked name stays locked.
    #[serde(default = "default_lock_duration")]
    pub duration: HumanDuration,
}

impl Default for LockoutConfig {
    fn default() -> Self {
        Self { threshold: default_threshold(), window: default_lock_window(), duration: default_lock_duration() }
    }
}

fn default_threshold() -> u32 {
    5
}
fn default_lock_window() -> HumanDuration {
    HumanDuration(Duration::from_secs(15 * 60))
}
fn default_lock_duration() -> HumanDuration {
    HumanDuration(Duration::from_secs(15 * 60))
}

/// `[auth.login_rate]`: login attempts per client address (token bucket).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginRateConfig {
    /// Sustained attempts per minute (0 disables the limit).
    #[serde(default = "default_per_minute")]
    pub per_minute: u32,
    /// Attempts allowed at once before the rate applies.
    #[serde(default = "default_burst")]
    pub burst: u32,
}

impl Default for LoginRateConfig {
    fn default() -> Self {
        Self { per_minute: default_per_minute(), burst: default_burst() }
    }
}

fn default_per_minute() -> u32 {
    20
}
fn default_burst() -> u32 {
    10
}

/// `[auth.totp]`: two-factor authentication (RFC 6238).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotpConfig {
    /// The issuer shown in authenticator apps.
    #[serde(default = "default_issuer")]
    pub issuer: String,
    /// User types that must use TOTP (groups can require it too:
    /// `require_totp` on the group).
    #[serde(default)]
    pub require_types: Vec<UserType>,
}

impl Default for TotpConfig {
    fn default() -> Self {
        Self { issuer: default_issuer(), require_types: Vec::new() }
    }
}

fn default_issuer() -> String {
    "sluice".into()
}

/// How the LDAP connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LdapTls {
    /// Plain LDAP (only on a trusted network or localhost).
    #[default]
    None,
    /// `ldap://` upgraded with the StartTLS extended operation.
    Starttls,
    /// TLS from the first byte (`ldaps://`).
    Ldaps,
}

/// One LDAP group → sluice groups (and user type) mapping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupMapping {
    /// The LDAP group: its DN or its name (`group_name_attribute`), case-insensitive.
    pub ldap: String,
    /// Sluice groups its members join.
    #[serde(default)]
    pub groups: Vec<String>,
    /// A user type its members get at least.
    #[serde(default, rename = "type")]
    pub user_type: Option<UserType>,
}

/// `[auth.ldap]` (also the body of `PUT /api/v1/settings/ldap`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LdapSettings {
    /// `ldap://host:port` or `ldaps://host:port`.
    pub url: String,
    /// `none`, `starttls` or `ldaps` (`ldaps://` URLs imply `ldaps`).
    #[serde(default)]
    pub tls: LdapTls,
    /// PEM file of the CA(s) that signed the server certificate (default:
    /// the system's roots).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub ca_file: Option<PathBuf>,
    /// Direct bind: a DN template with `{username}`, e.g.
    /// `uid={username},ou=people,dc=example,dc=org`.
    #[serde(default)]
    pub bind_dn: Option<String>,
    /// Search bind: where to look the user up.
    #[serde(default)]
    pub search_base: Option<String>,
    /// Search bind: the filter with `{username}`, e.g. `(uid={username})`.
    #[serde(default)]
    pub search_filter: Option<String>,
    /// Search bind: the account that searches (anonymous when missing).
    #[serde(default)]
    pub search_bind_dn: Option<String>,
    /// Search bind: its password.
    #[serde(default, skip_serializing_if = "never_serialized")]
    #[schema(write_only)]
    pub search_bind_password: Option<String>,
    /// Search bind: an environment variable holding its password.
    #[serde(default)]
    pub search_bind_password_env: Option<String>,
    /// Attribute of the user entry listing group DNs (default `memberOf`);
    /// used when `group_search_base` is not set.
    #[serde(default = "default_group_attribute")]
    pub group_attribute: String,
    /// Search groups here instead of reading `group_attribute`.
    #[serde(default)]
    pub group_search_base: Option<String>,
    /// Group search filter with `{dn}` and/or `{username}`.
    #[serde(default = "default_group_filter")]
    pub group_search_filter: String,
    /// The attribute holding a group's name.
    #[serde(default = "default_group_name_attribute")]
    pub group_name_attribute: String,
    /// Type of LDAP users no mapping raises.
    #[serde(default = "default_type")]
    pub default_type: UserType,
    /// LDAP group → sluice groups / type.
    #[serde(default)]
    pub group_map: Vec<GroupMapping>,
    /// Connect and operation timeout.
    #[serde(default = "default_ldap_timeout", with = "duration_str")]
    #[schema(value_type = String, example = "5s")]
    pub timeout: Duration,
}

/// `search_bind_password` is accepted but never sent back (written as
/// `skip_serializing_if` so that the API description still lists it).
fn never_serialized<T>(_: &T) -> bool {
    true
}

fn default_group_attribute() -> String {
    "memberOf".into()
}
fn default_group_filter() -> String {
    "(member={dn})".into()
}
fn default_group_name_attribute() -> String {
    "cn".into()
}
fn default_type() -> UserType {
    UserType::Viewer
}
fn default_ldap_timeout() -> Duration {
    Duration::from_secs(5)
}

/// `Duration` as a human string (`"5s"`), both ways.
mod duration_str {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};
    use sluice_core::config::HumanDuration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_duration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        HumanDuration::deserialize(d).map(|h| h.0)
    }
}

/// `"30m"`, `"12h"`, `"1500ms"`: the largest unit that divides the duration.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
    for (unit, n) in [("d", 86400), ("h", 3600), ("m", 60)] {
        if s != 0 && s.is_multiple_of(n) {
            return format!("{}{unit}", s / n);
        }
    }
    format!("{s}s")
}

impl LdapSettings {
    /// The effective TLS mode (`ldaps://` implies [`LdapTls::Ldaps`]).
    pub fn tls_mode(&self) -> LdapTls {
        if self.url.to_ascii_lowercase().starts_with("ldaps://") {
            LdapTls::Ldaps
        } else {
            self.tls
        }
    }

    /// Semantic checks; errors carry `prefix` + the key.
    pub fn check(&self, prefix: &str) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        let key = |k: &str| format!("{prefix}.{k}");
        let lower = self.url.to_ascii_lowercase();
        if !(lower.starts_with("ldap://") || lower.starts_with("ldaps://")) {
            errors.push(ConfigError::new(key("url"), "must start with ldap:// or ldaps://"));
        }
        if lower.starts_with("ldaps://") && self.tls == LdapTls::Starttls {
            errors.push(ConfigError::new(key("tls"), "starttls cannot be used with an ldaps:// URL"));
        }
        match (&self.bind_dn, &self.search_base) {
            (Some(_), Some(_)) => errors.push(ConfigError::new(
                prefix,
                "set either `bind_dn` (direct bind) or `search_base` (search bind), not both",
            )),
            (None, None) => {
                errors.push(ConfigError::new(prefix, "set `bind_dn` (direct bind) or `search_base` (search bind)"))
            }
            (Some(t), None) if !t.contains("{username}") => {
                errors.push(ConfigError::new(key("bind_dn"), "must contain {username}"))
            }
            (None, Some(_)) if !self.search_filter.as_deref().is_some_and(|f| f.contains("{username}")) => {
                errors.push(ConfigError::new(
                    key("search_filter"),
                    "required with search_base, and must contain {username}",
                ));
            }
            _ => {}
        }
        if self.search_bind_password.is_some() && self.search_bind_password_env.is_some() {
            errors.push(ConfigError::new(
                key("search_bind_password"),
                "set at most one of `search_bind_password` and `search_bind_password_env`",
            ));
        }
        if let Some(var) = &self.search_bind_password_env {
            if std::env::var(var).is_err() {
                errors.push(ConfigError::new(
                    key("search_bind_password_env"),
                    format!("environment variable {var} is not set"),
                ));
            }
        }
        if self.group_search_base.is_some()
            && !(self.group_search_filter.contains("{dn}") || self.group_search_filter.contains("{username}"))
        {
            errors.push(ConfigError::new(key("group_search_filter"), "must contain {dn} or {username}"));
        }
        if let Some(ca) = &self.ca_file {
            if !ca.exists() {
                errors.push(ConfigError::new(key("ca_file"), format!("{} does not exist", ca.display())));
            }
        }
        for (i, m) in self.group_map.iter().enumerate() {
            if m.ldap.trim().is_empty() {
                errors.push(ConfigError::new(key(&format!("group_map[{i}].ldap")), "must not be empty"));
            }
            for g in &m.groups {
                if let Err(e) = crate::model::check_group_name(g) {
                    errors.push(ConfigError::new(key(&format!("group_map[{i}].groups")), e));
                }
            }
        }
        if self.timeout.is_zero() {
            errors.push(ConfigError::new(key("timeout"), "must be more than 0"));
        }
        errors
    }

    /// The search account's password, from the settings or the environment.
    pub fn search_password(&self) -> Option<String> {
        self.search_bind_password
            .clone()
            .or_else(|| self.search_bind_password_env.as_ref().and_then(|v| std::env::var(v).ok()))
    }
}

impl AuthConfig {
    /// The database path, resolved against `data_dir`.
    pub fn db_path(&self, data_dir: &Path) -> PathBuf {
        if self.db.is_absolute() {
            self.db.clone()
        } else {
            data_dir.join(&self.db)
        }
    }

    /// Semantic checks of the whole section; errors name `auth.<key>`.
    pub fn check(&self) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        if self.db.as_os_str().is_empty() {
            errors.push(ConfigError::new("auth.db", "must not be empty"));
        }
        if !["auto", "always", "never"].contains(&self.cookie_secure.as_str()) {
            errors.push(ConfigError::new("auth.cookie_secure", "expected \"auto\", \"always\" or \"never\""));
        }
        if self.password_min_length < 8 {
            errors.push(ConfigError::new("auth.password_min_length", "must be at least 8"));
        }
        if self.session.idle_timeout.0.is_zero() {
            errors.push(ConfigError::new("auth.session.idle_timeout", "must be more than 0"));
        }
        if self.session.absolute_timeout.0 < self.session.idle_timeout.0 {
            errors.push(ConfigError::new("auth.session.absolute_timeout", "must not be shorter than idle_timeout"));
        }
        if self.lockout.threshold > 0 && (self.lockout.window.0.is_zero() || self.lockout.duration.0.is_zero()) {
            errors.push(ConfigError::new("auth.lockout", "window and duration must be more than 0"));
        }
        if self.login_rate.per_minute > 0 && self.login_rate.burst == 0 {
            errors.push(ConfigError::new("auth.login_rate.burst", "must be at least 1"));
        }
        if self.totp.issuer.is_empty() || self.totp.issuer.contains(':') {
            errors.push(ConfigError::new("auth.totp.issuer", "must be non-empty and contain no ':'"));
        }
        if let Some(l) = &self.ldap {
            errors.extend(l.check("auth.ldap"));
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AuthConfig, ConfigError> {
        let v: toml::Value = toml::from_str(text).unwrap();
        sluice_core::config::parse_table(v, "auth")
    }

    #[test]
    fn defaults_and_key_paths() {
        let c = parse("").unwrap();
        assert_eq!(c, AuthConfig::default());
        assert!(c.check().is_empty());
        let e = parse("[session]\nidle = \"5m\"").unwrap_err();
        assert!(e.to_string().starts_with("auth.session.idle: unknown field `idle`"), "{e}");
        let c = parse("cookie_secure = \"sometimes\"\n[session]\nidle_timeout = \"2h\"\nabsolute_timeout = \"1h\"")
            .unwrap();
        let errs: Vec<String> = c.check().iter().map(ToString::to_string).collect();
        assert_eq!(
            errs,
            [
                "auth.cookie_secure: expected \"auto\", \"always\" or \"never\"",
                "auth.session.absolute_timeout: must not be shorter than idle_timeout"
            ]
        );
    }

    #[test]
    fn ldap_checks() {
        let c = parse("[ldap]\nurl = \"http://x\"\ntls = \"starttls\"").unwrap();
        let errs: Vec<String> = c.check().iter().map(ToString::to_string).collect();
        assert_eq!(
            errs,
            [
                "auth.ldap.url: must start with ldap:// or ldaps://",
                "auth.ldap: set `bind_dn` (direct bind) or `search_base` (search bind)"
            ]
        );
        let c =
            parse("[ldap]\nurl = \"ldaps://x\"\ntls = \"starttls\"\nbind_dn = \"uid=x\"\ntimeout = \"2s\"").unwrap();
        let errs: Vec<String> = c.check().iter().map(ToString::to_string).collect();
        assert_eq!(
            errs,
            [
                "auth.ldap.tls: starttls cannot be used with an ldaps:// URL",
                "auth.ldap.bind_dn: must contain {username}"
            ]
        );
        let l = c.ldap.unwrap();
        assert_eq!(l.timeout, Duration::from_secs(2));
        assert_eq!(l.tls_mode(), LdapTls::Ldaps);
        let e = parse("[ldap]\nurl = \"ldap://x\"\nbind_dn = \"uid={username}\"\n[[ldap.group_map]]\nldap = \"admins\"\ntype = \"boss\"").unwrap_err();
        assert!(e.to_string().starts_with("auth.ldap.group_map[0].type: unknown variant `boss`"), "{e}");
    }

    #[test]
    fn durations_format() {
        assert_eq!(format_duration(Duration::from_secs(1800)), "30m");
        assert_eq!(format_duration(Duration::from_secs(43200)), "12h");
        assert_eq!(format_duration(Duration::from_secs(86400 * 30)), "30d");
        assert_eq!(format_duration(Duration::from_secs(61)), "61s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    }
}
