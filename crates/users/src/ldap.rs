//! LDAP authentication: bind as the user (directly with a DN template, or
//! after finding their DN with a search account), read their groups (the
//! entry's `memberOf`, or a group search), and map LDAP groups to sluice
//! groups and a user type.
//!
//! The connection is plain, StartTLS or LDAPS, with rustls on `ring`; a
//! `ca_file` replaces the system roots. User input is escaped for DNs
//! (`dn_escape`) and filters (`ldap_escape`). An empty password is refused
//! before any bind (an LDAP "unauthenticated bind" would succeed).
//!
//! LDAP users are created on their first successful login (source `ldap`,
//! no local password); at every login their type and their LDAP-derived
//! group memberships are set from the mapping (manual memberships stay).
//! Settings come from `[auth.ldap]` when present, else from the database
//! (`PUT /api/v1/settings/ldap`).

use std::collections::BTreeSet;
use std::sync::Arc;

use ldap3::{dn_escape, ldap_escape, LdapConn, LdapConnSettings, Scope, SearchEntry};
use rusqlite::params;
use serde_json::json;

use crate::accounts::{group_id, user_row};
use crate::audit::{self, Actor, Outcome};
use crate::config::{LdapSettings, LdapTls};
use crate::error::{LoginError, UsersError};
use crate::model::{UserSource, UserType};
use crate::{UserRow, Users};

/// Why an LDAP login failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LdapError {
    /// The directory said no (bad password, no such user, ambiguous user).
    #[error("{0}")]
    Refused(String),
    /// The server could not be used (connection, TLS, search account, config).
    #[error("{0}")]
    Unavailable(String),
}

/// Who the directory says the user is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdapIdentity {
    /// Their DN.
    pub dn: String,
    /// `cn` / `displayName`, if any.
    pub display_name: Option<String>,
    /// Their groups: DNs, and names (`group_name_attribute`) where known.
    pub groups: Vec<String>,
}

/// What a mapping makes of an identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// Sluice groups.
    pub groups: Vec<String>,
    /// User type.
    pub user_type: UserType,
}

/// Where the settings come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SettingsSource {
    /// `[auth.ldap]` in the config file (read-only through the API).
    Config,
    /// Set through the API.
    Database,
    /// LDAP is off.
    None,
}

const SETTINGS_KEY: &str = "ldap";

fn tls_config(s: &LdapSettings) -> Result<Arc<rustls::ClientConfig>, LdapError> {
    let mut roots = rustls::RootCertStore::empty();
    match &s.ca_file {
        Some(path) => {
            let pem =
                std::fs::read(path).map_err(|e| LdapError::Unavailable(format!("ca_file {}: {e}", path.display())))?;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.map_err(|e| LdapError::Unavailable(format!("ca_file {}: {e}", path.display())))?;
                roots.add(cert).map_err(|e| LdapError::Unavailable(format!("ca_file {}: {e}", path.display())))?;
            }
            if roots.is_empty() {
                return Err(LdapError::Unavailable(format!("ca_file {}: no certificates", path.display())));
            }
        }
        None => {
            let native = rustls_native_certs();
            for cert in native {
                let _ = roots.add(cert);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| LdapError::Unavailable(format!("tls: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(cfg))
}

/// The system's CA certificates (Debian's bundle), for servers with public certificates.
fn rustls_native_certs() -> Vec<rustls::pki_types::CertificateDer<'static>> {
    let Ok(pem) = std::fs::read("/etc/ssl/certs/ca-certificates.crt") else { return Vec::new() };
    rustls_pemfile::certs(&mut pem.as_slice()).filter_map(Result::ok).collect()
}

fn connect(s: &LdapSettings) -> Result<LdapConn, LdapError> {
    let mut settings = LdapConnSettings::new().set_conn_timeout(s.timeout);
    match s.tls_mode() {
        LdapTls::None => {}
        LdapTls::Starttls => settings = settings.set_starttls(true).set_config(tls_config(s)?),
        LdapTls::Ldaps => settings = settings.set_config(tls_config(s)?),
    }
    let mut conn = LdapConn::with_settings(settings, &s.url)
        .map_err(|e| LdapError::Unavailable(format!("connect {}: {e}", s.url)))?;
    conn.with_timeout(s.timeout);
    Ok(conn)
}

fn entry(re: ldap3::ResultEntry) -> Result<SearchEntry, LdapError> {
    // `construct` panics on malformed BER from the server; a bad answer must
    // not take the node down.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| SearchEntry::construct(re)))
        .map_err(|_| LdapError::Unavailable("malformed search entry from the server".into()))
}

fn attr_ci<'a>(e: &'a SearchEntry, name: &str) -> Vec<&'a String> {
    e.attrs.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).flat_map(|(_, v)| v.iter()).collect()
}

/// Binds as `username` with `password`, returns their DN and groups.
pub fn authenticate(s: &LdapSettings, username: &str, password: &str) -> Result<LdapIdentity, LdapError> {
    if password.is_empty() {
        return Err(LdapError::Refused("empty password".into()));
    }
    let mut conn = connect(s)?;
    let dn = match (&s.bind_dn, &s.search_base) {
        (Some(template), _) => template.replace("{username}", &dn_escape(username)),
        (None, Some(base)) => {
            match (&s.search_bind_dn, s.search_password()) {
                (Some(dn), Some(pw)) => {
                    conn.simple_bind(dn, &pw)
                        .and_then(|r| r.success())
                        .map_err(|e| LdapError::Unavailable(format!("search account bind: {e}")))?;
                }
                (Some(dn), None) => {
                    return Err(LdapError::Unavailable(format!("search account {dn}: no password configured")))
                }
                _ => {}
            }
            let filter =
                s.search_filter.as_deref().unwrap_or("(uid={username})").replace("{username}", &ldap_escape(username));
            let (found, _) = conn
                .search(base, Scope::Subtree, &filter, vec!["1.1"])
                .and_then(|r| r.success())
                .map_err(|e| LdapError::Unavailable(format!("user search: {e}")))?;
            match found.len() {
                1 => entry(found.into_iter().next().ok_or_else(|| LdapError::Refused("no such user".into()))?)?.dn,
                0 => return Err(LdapError::Refused("no such user".into())),
                n => return Err(LdapError::Refused(format!("{n} entries match the user filter"))),
            }
        }
        (None, None) => return Err(LdapError::Unavailable("neither bind_dn nor search_base is set".into())),
    };
    let bind = conn.simple_bind(&dn, password).map_err(|e| LdapError::Unavailable(format!("bind: {e}")))?;
    if bind.rc != 0 {
        let _ = conn.unbind();
        return Err(LdapError::Refused(format!("bind failed: {} ({})", bind.text, bind.rc)));
    }
    // Read the entry as the user: display name and memberOf.
    let attrs = vec![s.group_attribute.as_str(), "cn", "displayName"];
    let (entries, _) = conn
        .search(&dn, Scope::Base, "(objectClass=*)", attrs)
        .and_then(|r| r.success())
        .map_err(|e| LdapError::Unavailable(format!("read user entry: {e}")))?;
    let mut display_name = None;
    let mut groups = BTreeSet::new();
    if let Some(re) = entries.into_iter().next() {
        let e = entry(re)?;
        display_name = attr_ci(&e, "displayName").first().or(attr_ci(&e, "cn").first()).map(|s| s.to_string());
        if s.group_search_base.is_none() {
            for g in attr_ci(&e, &s.group_attribute) {
                groups.insert(g.clone());
            }
        }
    }
    if let Some(base) = &s.group_search_base {
        let filter =
            s.group_search_filter.replace("{dn}", &ldap_escape(&dn)).replace("{username}", &ldap_escape(username));
        let (found, _) = conn
            .search(base, Scope::Subtree, &filter, vec![s.group_name_attribute.as_str()])
            .and_then(|r| r.success())
            .map_err(|e| LdapError::Unavailable(format!("group search: {e}")))?;
        for re in found {
            let e = entry(re)?;
            for name in attr_ci(&e, &s.group_name_attribute) {
                groups.insert(name.clone());
            }
            groups.insert(e.dn);
        }
    }
    let _ = conn.unbind();
    Ok(LdapIdentity { dn, display_name, groups: groups.into_iter().collect() })
}

/// The first RDN value of a DN (`cn=admins,ou=groups,…` → `admins`).
fn rdn_value(dn: &str) -> Option<&str> {
    dn.split(',').next()?.split_once('=').map(|(_, v)| v.trim())
}

/// Applies `settings.group_map` to an identity.
pub fn map_identity(s: &LdapSettings, id: &LdapIdentity) -> Mapped {
    let mut groups = BTreeSet::new();
    let mut user_type = s.default_type;
    for m in &s.group_map {
        let hit = id
            .groups
            .iter()
            .any(|g| g.eq_ignore_ascii_case(&m.ldap) || rdn_value(g).is_some_and(|v| v.eq_ignore_ascii_case(&m.ldap)));
        if hit {
            groups.extend(m.groups.iter().cloned());
            if let Some(t) = m.user_type {
                user_type = user_type.max(t);
            }
        }
    }
    Mapped { groups: groups.into_iter().collect(), user_type }
}

impl Users {
    /// The LDAP settings in force and where they come from.
    pub fn ldap_settings(&self) -> Result<(SettingsSource, Option<LdapSettings>), UsersError> {
        if let Some(s) = &self.cfg.ldap {
            return Ok((SettingsSource::Config, Some(s.clone())));
        }
        match Self::setting(&self.conn(), SETTINGS_KEY)? {
            Some(text) => {
                let s: LdapSettings = serde_json::from_str(&text).map_err(|e| UsersError::Corrupt {
                    path: self.cfg.db.display().to_string(),
                    message: format!("stored LDAP settings: {e}"),
                })?;
                Ok((SettingsSource::Database, Some(s)))
            }
            None => Ok((SettingsSource::None, None)),
        }
    }

    pub(crate) fn ldap_settings_effective(&self) -> Result<Option<LdapSettings>, LoginError> {
        self.ldap_settings().map(|(_, s)| s).map_err(|e| LoginError::Internal(e.to_string()))
    }

    /// Stores LDAP settings (refused when the config file sets them). A
    /// missing `search_bind_password` keeps the stored one.
    pub fn set_ldap_settings(&self, actor: &Actor, mut s: LdapSettings) -> Result<(), UsersError> {
        if self.cfg.ldap.is_some() {
            return Err(UsersError::Conflict("LDAP is configured in the config file ([auth.ldap])".into()));
        }
        if let Some(e) = s.check("settings").into_iter().next() {
            return Err(UsersError::Invalid {
                field: Some(e.path.trim_start_matches("settings.").to_string()),
                message: e.message,
            });
        }
        if s.search_bind_password.is_none() {
            if let (_, Some(old)) = self.ldap_settings()? {
                s.search_bind_password = old.search_bind_password;
            }
        }
        // The password is skipped when serializing for the API; store it explicitly.
        let mut v = serde_json::to_value(&s).map_err(|e| UsersError::Internal(e.to_string()))?;
        if let Some(pw) = &s.search_bind_password {
            v["search_bind_password"] = json!(pw);
        }
        let now = self.clock.now_ms();
        self.tx(|tx| {
            tx.execute(
                "INSERT INTO settings(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![SETTINGS_KEY, v.to_string()],
            )?;
            let mut shown = serde_json::to_value(&s).map_err(|e| UsersError::Internal(e.to_string()))?;
            shown["search_bind_password_set"] = json!(s.search_bind_password.is_some());
            audit::write(tx, now, actor, "settings.ldap", "ldap", json!({"settings": shown}), Outcome::Success)
        })
    }

    /// Removes the stored LDAP settings.
    pub fn delete_ldap_settings(&self, actor: &Actor) -> Result<(), UsersError> {
        if self.cfg.ldap.is_some() {
            return Err(UsersError::Conflict("LDAP is configured in the config file ([auth.ldap])".into()));
        }
        let now = self.clock.now_ms();
        self.tx(|tx| {
            tx.execute("DELETE FROM settings WHERE key = ?1", [SETTINGS_KEY])?;
            audit::write(tx, now, actor, "settings.ldap", "ldap", json!({"settings": null}), Outcome::Success)
        })
    }

    /// Creates or updates the LDAP user `name` after a successful bind:
    /// type and LDAP memberships from the mapping (missing sluice groups are
    /// created). A local user of that name is never taken over.
    pub(crate) fn ldap_sync(&self, name: &str, id: &LdapIdentity, s: &LdapSettings) -> Result<UserRow, LoginError> {
        let mapped = map_identity(s, id);
        let now = self.clock.now_ms();
        let system = Actor::system();
        let res = self.tx(|tx| {
            let existing = user_row(tx, name)?;
            let user_id = match &existing {
                Some(r) if r.source == UserSource::Local => {
                    return Err(UsersError::Conflict(format!("{name} is a local user")));
                }
                Some(r) => {
                    if r.user_type != mapped.user_type {
                        tx.execute("UPDATE users SET type = ?1, updated_at = ?2 WHERE id = ?3", params![mapped.user_type.as_str(), now, r.id])?;
                        audit::write(
                            tx,
                            now,
                            &system,
                            "user.update",
                            name,
                            json!({"type": {"from": r.user_type, "to": mapped.user_type}, "reason": "ldap group mapping"}),
                            Outcome::Success,
                        )?;
                    }
                    r.id
                }
                None => {
                    crate::model::check_username(name).map_err(|m| UsersError::field("username", m))?;
                    tx.execute(
                        "INSERT INTO users(username, display_name, type, source, created_at, updated_at) VALUES (?1, ?2, ?3, 'ldap', ?4, ?4)",
                        params![name, id.display_name.clone().unwrap_or_default(), mapped.user_type.as_str(), now],
                    )?;
                    let new_id = tx.last_insert_rowid();
                    audit::write(
                        tx,
                        now,
                        &system,
                        "user.create",
                        name,
                        json!({"type": mapped.user_type, "source": "ldap", "dn": id.dn}),
                        Outcome::Success,
                    )?;
                    new_id
                }
            };
            let before: BTreeSet<String> = {
                let mut st = tx.prepare(
                    "SELECT g.name FROM memberships m JOIN groups g ON g.id = m.group_id WHERE m.user_id = ?1 AND m.origin = 'ldap'",
                )?;
                let v = st.query_map([user_id], |r| r.get(0))?.collect::<Result<BTreeSet<String>, _>>()?;
                v
            };
            tx.execute("DELETE FROM memberships WHERE user_id = ?1 AND origin = 'ldap'", [user_id])?;
            for g in &mapped.groups {
                let gid = match group_id(tx, g)? {
                    Some(id) => id,
                    None => {
                        tx.execute(
                            "INSERT INTO groups(name, description, created_at, updated_at) VALUES (?1, 'created by the LDAP group mapping', ?2, ?2)",
                            params![g, now],
                        )?;
                        let gid = tx.last_insert_rowid();
                        audit::write(tx, now, &system, "group.create", &format!("group:{g}"), json!({"reason": "ldap group mapping"}), Outcome::Success)?;
                        gid
                    }
                };
                tx.execute("INSERT INTO memberships(user_id, group_id, origin) VALUES (?1, ?2, 'ldap')", [user_id, gid])?;
            }
            let after: BTreeSet<String> = mapped.groups.iter().cloned().collect();
            if before != after {
                audit::write(
                    tx,
                    now,
                    &system,
                    "group.ldap_sync",
                    name,
                    json!({"ldap_groups": id.groups, "groups": {"from": before, "to": after}}),
                    Outcome::Success,
                )?;
            }
            user_row(tx, name)?.ok_or_else(|| UsersError::Internal("ldap user vanished".into()))
        });
        match res {
            Ok(r) => Ok(r),
            Err(UsersError::Conflict(_)) => Err(LoginError::InvalidCredentials),
            Err(e) => Err(LoginError::Internal(e.to_string())),
        }
    }

    /// `POST /api/v1/settings/ldap/test`: binds with the given (or current)
    /// settings and shows what the mapping makes of the user, changing nothing.
    pub fn ldap_test(
        &self,
        settings: Option<LdapSettings>,
        username: &str,
        password: &str,
    ) -> Result<Result<(LdapIdentity, Mapped), String>, UsersError> {
        let s = match settings {
            Some(mut s) => {
                if let Some(e) = s.check("settings").into_iter().next() {
                    return Ok(Err(e.to_string()));
                }
                if s.search_bind_password.is_none() {
                    if let (_, Some(old)) = self.ldap_settings()? {
                        s.search_bind_password = old.search_bind_password;
                    }
                }
                s
            }
            None => match self.ldap_settings()? {
                (_, Some(s)) => s,
                (_, None) => return Ok(Err("LDAP is not configured".into())),
            },
        };
        let name = crate::model::normalize_username(username);
        Ok(match authenticate(&s, &name, password) {
            Ok(id) => {
                let m = map_identity(&s, &id);
                Ok((id, m))
            }
            Err(e) => Err(e.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GroupMapping;

    #[test]
    fn mapping_by_dn_or_name_raises_type() {
        let s: LdapSettings = serde_json::from_value(json!({
            "url": "ldap://x", "bind_dn": "uid={username},dc=x",
            "group_map": [
                {"ldap": "cn=admins,ou=groups,dc=example,dc=org", "groups": ["ops"], "type": "admin"},
                {"ldap": "developers", "groups": ["dev", "ops"]},
                {"ldap": "nobody", "groups": ["never"], "type": "operator"}
            ]
        }))
        .unwrap();
        assert_eq!(
            s.group_map[1],
            GroupMapping { ldap: "developers".into(), groups: vec!["dev".into(), "ops".into()], user_type: None }
        );
        let id = LdapIdentity {
            dn: "uid=alice,ou=people,dc=example,dc=org".into(),
            display_name: None,
            groups: vec![
                "CN=Admins,ou=groups,dc=example,dc=org".into(),
                "cn=developers,ou=groups,dc=example,dc=org".into(),
            ],
        };
        assert_eq!(
            map_identity(&s, &id),
            Mapped { groups: vec!["dev".into(), "ops".into()], user_type: UserType::Admin }
        );
        let bob = LdapIdentity { groups: vec!["cn=developers,ou=groups,dc=example,dc=org".into()], ..id };
        assert_eq!(
            map_identity(&s, &bob),
            Mapped { groups: vec!["dev".into(), "ops".into()], user_type: UserType::Viewer }
        );
    }
}
