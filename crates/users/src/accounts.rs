//! Managing users, groups, memberships, assignments and API tokens — what an
//! administrator does through `/api/v1/users|groups|assignments|tokens` and
//! the `sluice user|group|assign|token` commands. Every change writes its
//! audit record in the same transaction.

use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension as _};
use serde::Deserialize;
use serde_json::json;
use sluice_query::principal::Glob;
use sluice_query::SourcePattern;

use crate::audit::{self, Actor, Outcome};
use crate::clock::rfc3339;
use crate::error::UsersError;
use crate::model::{
    check_group_name, check_username, normalize_username, ApiToken, Assignment, Group, Subject, SubjectKind,
    TokenScope, TotpStatus, User, UserSource, UserType,
};
use crate::{conflict_on_unique, password, secret, UserRow, Users, USER_COLS};

/// `POST /api/v1/users`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    /// Login name (lower-cased).
    pub username: String,
    /// Free text.
    #[serde(default)]
    pub display_name: Option<String>,
    /// Type.
    #[serde(rename = "type")]
    pub user_type: UserType,
    /// Password (local users).
    #[serde(default)]
    pub password: Option<String>,
    /// Groups to join (must exist).
    #[serde(default)]
    pub groups: Vec<String>,
}

/// `PATCH /api/v1/users/{username}`: only the keys present change.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserPatch {
    /// New display name.
    #[serde(default)]
    pub display_name: Option<String>,
    /// New type.
    #[serde(default, rename = "type")]
    pub user_type: Option<UserType>,
    /// Disable / enable.
    #[serde(default)]
    pub disabled: Option<bool>,
    /// New password (local users).
    #[serde(default)]
    pub password: Option<String>,
    /// Replaces the manual group memberships.
    #[serde(default)]
    pub groups: Option<Vec<String>>,
}

/// `POST /api/v1/groups`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewGroup {
    /// Name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// Members must use TOTP.
    #[serde(default)]
    pub require_totp: bool,
}

/// `PATCH /api/v1/groups/{name}`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupPatch {
    /// New description.
    #[serde(default)]
    pub description: Option<String>,
    /// Require TOTP of members.
    #[serde(default)]
    pub require_totp: Option<bool>,
}

pub(crate) fn user_row(conn: &Connection, username: &str) -> Result<Option<UserRow>, UsersError> {
    Ok(conn
        .prepare_cached(&format!("SELECT {USER_COLS} FROM users WHERE username = ?1"))?
        .query_row([username], UserRow::from_row)
        .optional()?)
}

pub(crate) fn user_row_by_id(conn: &Connection, id: i64) -> Result<Option<UserRow>, UsersError> {
    Ok(conn
        .prepare_cached(&format!("SELECT {USER_COLS} FROM users WHERE id = ?1"))?
        .query_row([id], UserRow::from_row)
        .optional()?)
}

pub(crate) fn must_user(conn: &Connection, username: &str) -> Result<UserRow, UsersError> {
    user_row(conn, &normalize_username(username))?.ok_or_else(|| UsersError::NotFound(format!("no user {username:?}")))
}

pub(crate) fn group_id(conn: &Connection, name: &str) -> Result<Option<i64>, UsersError> {
    Ok(conn.prepare_cached("SELECT id FROM groups WHERE name = ?1")?.query_row([name], |r| r.get(0)).optional()?)
}

fn must_group(conn: &Connection, name: &str) -> Result<i64, UsersError> {
    group_id(conn, name)?.ok_or_else(|| UsersError::NotFound(format!("no group {name:?}")))
}

/// Group names of a user (manual and LDAP), sorted, unique.
pub(crate) fn user_groups(conn: &Connection, user_id: i64) -> Result<Vec<String>, UsersError> {
    let mut st = conn.prepare_cached(
        "SELECT DISTINCT g.name FROM memberships m JOIN groups g ON g.id = m.group_id WHERE m.user_id = ?1 ORDER BY 1",
    )?;
    let v = st.query_map([user_id], |r| r.get(0))?.collect::<Result<Vec<String>, _>>()?;
    Ok(v)
}

/// Group ids of a user.
pub(crate) fn user_group_ids(conn: &Connection, user_id: i64) -> Result<Vec<i64>, UsersError> {
    let mut st = conn.prepare_cached("SELECT DISTINCT group_id FROM memberships WHERE user_id = ?1")?;
    let v = st.query_map([user_id], |r| r.get(0))?.collect::<Result<Vec<i64>, _>>()?;
    Ok(v)
}

fn enabled_admins(conn: &Connection) -> Result<i64, UsersError> {
    Ok(conn.query_row("SELECT COUNT(*) FROM users WHERE type = 'admin' AND disabled = 0", [], |r| r.get(0))?)
}

fn check_glob(field: &str, g: &Glob) -> Result<(), UsersError> {
    if g.0.is_empty() {
        return Err(UsersError::field(field, format!("{field} must not be empty (use \"*\" for any)")));
    }
    if g.0.len() > 256 {
        return Err(UsersError::field(field, format!("{field} is longer than 256 characters")));
    }
    Ok(())
}

impl Users {
    /// Whether `row` must use TOTP (its type, or one of its groups, requires it).
    pub(crate) fn totp_required(&self, conn: &Connection, row: &UserRow) -> Result<bool, UsersError> {
        if self.cfg.totp.require_types.contains(&row.user_type) {
            return Ok(true);
        }
        let n: i64 = conn.query_row(
            "SELECT COUNT(*) FROM memberships m JOIN groups g ON g.id = m.group_id WHERE m.user_id = ?1 AND g.require_totp = 1",
            [row.id],
            |r| r.get(0),
        )?;
        Ok(n > 0)
    }

    pub(crate) fn user_dto(&self, conn: &Connection, row: &UserRow) -> Result<User, UsersError> {
        let left: i64 = conn.query_row(
            "SELECT COUNT(*) FROM recovery_codes WHERE user_id = ?1 AND used_at IS NULL",
            [row.id],
            |r| r.get(0),
        )?;
        let now = self.clock.now_ms();
        Ok(User {
            username: row.username.clone(),
            display_name: row.display_name.clone(),
            user_type: row.user_type,
            source: row.source,
            disabled: row.disabled,
            groups: user_groups(conn, row.id)?,
            totp: TotpStatus {
                enabled: row.totp_secret.is_some(),
                required: self.totp_required(conn, row)?,
                recovery_codes_left: u32::try_from(left).unwrap_or(0),
            },
            locked_until: self.limiter.locked_until(&row.username, now).map(rfc3339),
            last_login: row.last_login.map(rfc3339),
            created_at: rfc3339(row.created_at),
            updated_at: rfc3339(row.updated_at),
            password_one_time: row.password_one_time,
        })
    }

    /// Every user, by name.
    pub fn list_users(&self) -> Result<Vec<User>, UsersError> {
        let conn = self.conn();
        let rows = conn
            .prepare(&format!("SELECT {USER_COLS} FROM users ORDER BY username"))?
            .query_map([], UserRow::from_row)?
            .collect::<Result<Vec<_>, _>>()?;
        rows.iter().map(|r| self.user_dto(&conn, r)).collect()
    }

    /// One user.
    pub fn get_user(&self, username: &str) -> Result<User, UsersError> {
        let conn = self.conn();
        let row = must_user(&conn, username)?;
        self.user_dto(&conn, &row)
    }

    /// Creates a user (local: with a password; see [`NewUser`]).
    pub fn create_user(&self, actor: &Actor, new: NewUser) -> Result<User, UsersError> {
        let username = normalize_username(&new.username);
        check_username(&username).map_err(|m| UsersError::field("username", m))?;
        let password = new.password.ok_or_else(|| UsersError::field("password", "a password is required"))?;
        password::check_policy(&username, &password, self.cfg.password_min_length, "password")?;
        let hash = password::hash(&password)?;
        let display = new.display_name.unwrap_or_default();
        let now = self.clock.now_ms();
        self.tx(|tx| {
            tx.execute(
                "INSERT INTO users(username, display_name, type, source, password_hash, created_at, updated_at)
                 VALUES (?1, ?2, ?3, 'local', ?4, ?5, ?5)",
                params![username, display, new.user_type.as_str(), hash, now],
            )
            .map_err(|e| conflict_on_unique(e, || format!("user {username:?} exists")))?;
            let id = tx.last_insert_rowid();
            for g in &new.groups {
                let gid = must_group(tx, g)?;
                tx.execute(
                    "INSERT OR IGNORE INTO memberships(user_id, group_id, origin) VALUES (?1, ?2, 'manual')",
                    [id, gid],
                )?;
            }
            audit::write(
                tx,
                now,
                actor,
                "user.create",
                &username,
                json!({"type": new.user_type, "groups": new.groups, "source": "local"}),
                Outcome::Success,
            )?;
            let row = must_user(tx, &username)?;
            self.user_dto(tx, &row)
        })
    }

    /// Changes a user (see [`UserPatch`]).
    pub fn update_user(&self, actor: &Actor, username: &str, patch: UserPatch) -> Result<User, UsersError> {
        let hash = match &patch.password {
            Some(p) => {
                password::check_policy(&normalize_username(username), p, self.cfg.password_min_length, "password")?;
                Some(password::hash(p)?)
            }
            None => None,
        };
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let row = must_user(tx, username)?;
            let mut changed = serde_json::Map::new();
            if let Some(d) = &patch.display_name {
                tx.execute("UPDATE users SET display_name = ?1 WHERE id = ?2", params![d, row.id])?;
                changed.insert("display_name".into(), json!(d));
            }
            if let Some(t) = patch.user_type {
                tx.execute("UPDATE users SET type = ?1 WHERE id = ?2", params![t.as_str(), row.id])?;
                changed.insert("type".into(), json!({"from": row.user_type, "to": t}));
            }
            if let Some(d) = patch.disabled {
                tx.execute("UPDATE users SET disabled = ?1 WHERE id = ?2", params![d, row.id])?;
                changed.insert("disabled".into(), json!(d));
                if d {
                    tx.execute("DELETE FROM sessions WHERE user_id = ?1", [row.id])?;
                }
            }
            if let Some(h) = &hash {
                if row.source == UserSource::Ldap {
                    return Err(UsersError::field("password", "LDAP users have no sluice password"));
                }
                tx.execute("UPDATE users SET password_hash = ?1 WHERE id = ?2", params![h, row.id])?;
                tx.execute("DELETE FROM sessions WHERE user_id = ?1", [row.id])?;
                changed.insert("password".into(), json!("changed"));
            }
            if let Some(groups) = &patch.groups {
                let mut ids = Vec::new();
                for g in groups {
                    ids.push(must_group(tx, g)?);
                }
                tx.execute("DELETE FROM memberships WHERE user_id = ?1 AND origin = 'manual'", [row.id])?;
                for gid in ids {
                    tx.execute(
                        "INSERT INTO memberships(user_id, group_id, origin) VALUES (?1, ?2, 'manual')",
                        [row.id, gid],
                    )?;
                }
                changed.insert("groups".into(), json!(groups));
            }
            if row.user_type == UserType::Admin && !row.disabled && enabled_admins(tx)? == 0 {
                return Err(UsersError::Conflict("this change would leave no enabled administrator".into()));
            }
            tx.execute("UPDATE users SET updated_at = ?1 WHERE id = ?2", params![now, row.id])?;
            audit::write(tx, now, actor, "user.update", &row.username, json!(changed), Outcome::Success)?;
            let row = must_user(tx, &row.username)?;
            self.user_dto(tx, &row)
        })
    }

    /// Sets a local user's password (CLI `sluice user passwd`, admin API); ends their sessions.
    pub fn set_password(&self, actor: &Actor, username: &str, new_password: &str) -> Result<(), UsersError> {
        let name = normalize_username(username);
        password::check_policy(&name, new_password, self.cfg.password_min_length, "password")?;
        let hash = password::hash(new_password)?;
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let row = must_user(tx, &name)?;
            if row.source == UserSource::Ldap {
                return Err(UsersError::Forbidden("LDAP users change their password in the directory".into()));
            }
            tx.execute(
                "UPDATE users SET password_hash = ?1, password_one_time = 0, updated_at = ?2 WHERE id = ?3",
                params![hash, now, row.id],
            )?;
            tx.execute("DELETE FROM sessions WHERE user_id = ?1", [row.id])?;
            audit::write(tx, now, actor, "user.password", &row.username, json!({}), Outcome::Success)
        })
    }

    /// Deletes a user and everything they own. Refuses the last enabled admin and `actor` themselves.
    pub fn delete_user(&self, actor: &Actor, username: &str) -> Result<(), UsersError> {
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let row = must_user(tx, username)?;
            if matches!(actor.kind, crate::ActorKind::User | crate::ActorKind::Token) && actor.name == row.username {
                return Err(UsersError::Conflict("you cannot delete yourself".into()));
            }
            tx.execute("DELETE FROM users WHERE id = ?1", [row.id])?;
            if row.user_type == UserType::Admin && !row.disabled && enabled_admins(tx)? == 0 {
                return Err(UsersError::Conflict("cannot delete the last enabled administrator".into()));
            }
            audit::write(tx, now, actor, "user.delete", &row.username, json!({"type": row.user_type}), Outcome::Success)
        })?;
        self.limiter.reset(&normalize_username(username));
        Ok(())
    }

    /// Clears a name's login lockout.
    pub fn unlock(&self, actor: &Actor, username: &str) -> Result<(), UsersError> {
        let now = self.clock.now_ms();
        let name = normalize_username(username);
        self.tx(|tx| {
            let row = must_user(tx, &name)?;
            audit::write(tx, now, actor, "user.unlock", &row.username, json!({}), Outcome::Success)
        })?;
        self.limiter.reset(&name);
        Ok(())
    }

    /// Disables a user's TOTP and deletes their recovery codes.
    pub fn reset_totp(&self, actor: &Actor, username: &str) -> Result<(), UsersError> {
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let row = must_user(tx, username)?;
            tx.execute(
                "UPDATE users SET totp_secret = NULL, totp_pending = NULL, totp_last_step = 0, updated_at = ?1 WHERE id = ?2",
                params![now, row.id],
            )?;
            tx.execute("DELETE FROM recovery_codes WHERE user_id = ?1", [row.id])?;
            audit::write(tx, now, actor, "user.totp_reset", &row.username, json!({}), Outcome::Success)
        })
    }

    // ---- groups ------------------------------------------------------------

    fn group_dto(conn: &Connection, id: i64) -> Result<Group, UsersError> {
        let (name, description, require_totp, created_at, updated_at): (String, String, bool, i64, i64) = conn
            .query_row(
                "SELECT name, description, require_totp, created_at, updated_at FROM groups WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )?;
        let members = |origin: &str| -> Result<Vec<String>, UsersError> {
            let mut st = conn.prepare_cached(
                "SELECT u.username FROM memberships m JOIN users u ON u.id = m.user_id
                 WHERE m.group_id = ?1 AND m.origin = ?2 ORDER BY 1",
            )?;
            let v = st.query_map(params![id, origin], |r| r.get(0))?.collect::<Result<Vec<String>, _>>()?;
            Ok(v)
        };
        Ok(Group {
            name,
            description,
            require_totp,
            members: members("manual")?,
            ldap_members: members("ldap")?,
            created_at: rfc3339(created_at),
            updated_at: rfc3339(updated_at),
        })
    }

    /// Every group, by name.
    pub fn list_groups(&self) -> Result<Vec<Group>, UsersError> {
        let conn = self.conn();
        let ids = conn
            .prepare("SELECT id FROM groups ORDER BY name")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<Vec<i64>, _>>()?;
        ids.into_iter().map(|id| Self::group_dto(&conn, id)).collect()
    }

    /// One group.
    pub fn get_group(&self, name: &str) -> Result<Group, UsersError> {
        let conn = self.conn();
        Self::group_dto(&conn, must_group(&conn, name)?)
    }

    /// Creates a group.
    pub fn create_group(&self, actor: &Actor, new: NewGroup) -> Result<Group, UsersError> {
        check_group_name(&new.name).map_err(|m| UsersError::field("name", m))?;
        let now = self.clock.now_ms();
        self.tx(|tx| {
            tx.execute(
                "INSERT INTO groups(name, description, require_totp, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)",
                params![new.name, new.description, new.require_totp, now],
            )
            .map_err(|e| conflict_on_unique(e, || format!("group {:?} exists", new.name)))?;
            let id = tx.last_insert_rowid();
            audit::write(
                tx,
                now,
                actor,
                "group.create",
                &format!("group:{}", new.name),
                json!({"require_totp": new.require_totp}),
                Outcome::Success,
            )?;
            Self::group_dto(tx, id)
        })
    }

    /// Changes a group.
    pub fn update_group(&self, actor: &Actor, name: &str, patch: GroupPatch) -> Result<Group, UsersError> {
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let id = must_group(tx, name)?;
            if let Some(d) = &patch.description {
                tx.execute("UPDATE groups SET description = ?1 WHERE id = ?2", params![d, id])?;
            }
            if let Some(t) = patch.require_totp {
                tx.execute("UPDATE groups SET require_totp = ?1 WHERE id = ?2", params![t, id])?;
            }
            tx.execute("UPDATE groups SET updated_at = ?1 WHERE id = ?2", params![now, id])?;
            audit::write(
                tx,
                now,
                actor,
                "group.update",
                &format!("group:{name}"),
                json!({"description": patch.description, "require_totp": patch.require_totp}),
                Outcome::Success,
            )?;
            Self::group_dto(tx, id)
        })
    }

    /// Deletes a group, its memberships and assignments.
    pub fn delete_group(&self, actor: &Actor, name: &str) -> Result<(), UsersError> {
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let id = must_group(tx, name)?;
            tx.execute("DELETE FROM groups WHERE id = ?1", [id])?;
            audit::write(tx, now, actor, "group.delete", &format!("group:{name}"), json!({}), Outcome::Success)
        })
    }

    /// Adds a manual member (idempotent).
    pub fn add_member(&self, actor: &Actor, group: &str, username: &str) -> Result<(), UsersError> {
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let gid = must_group(tx, group)?;
            let user = must_user(tx, username)?;
            let n = tx.execute(
                "INSERT OR IGNORE INTO memberships(user_id, group_id, origin) VALUES (?1, ?2, 'manual')",
                [user.id, gid],
            )?;
            if n > 0 {
                audit::write(
                    tx,
                    now,
                    actor,
                    "group.member_add",
                    &format!("group:{group}"),
                    json!({"user": user.username}),
                    Outcome::Success,
                )?;
            }
            Ok(())
        })
    }

    /// Removes a manual member (`NotFound` when not one).
    pub fn remove_member(&self, actor: &Actor, group: &str, username: &str) -> Result<(), UsersError> {
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let gid = must_group(tx, group)?;
            let user = must_user(tx, username)?;
            let n = tx.execute(
                "DELETE FROM memberships WHERE user_id = ?1 AND group_id = ?2 AND origin = 'manual'",
                [user.id, gid],
            )?;
            if n == 0 {
                return Err(UsersError::NotFound(format!("{} is not a member of {group:?}", user.username)));
            }
            audit::write(
                tx,
                now,
                actor,
                "group.member_remove",
                &format!("group:{group}"),
                json!({"user": user.username}),
                Outcome::Success,
            )
        })
    }

    // ---- assignments -------------------------------------------------------

    fn subject_ids(conn: &Connection, s: &Subject) -> Result<(Option<i64>, Option<i64>), UsersError> {
        Ok(match s.kind {
            SubjectKind::User => (Some(must_user(conn, &s.name)?.id), None),
            SubjectKind::Group => (None, Some(must_group(conn, &s.name)?)),
        })
    }

    /// Assignments, all or of one subject.
    pub fn list_assignments(&self, subject: Option<&Subject>) -> Result<Vec<Assignment>, UsersError> {
        let conn = self.conn();
        let (uid, gid) = match subject {
            Some(s) => Self::subject_ids(&conn, s)?,
            None => (None, None),
        };
        let mut st = conn.prepare(
            "SELECT a.id, u.username, g.name, a.pat_group, a.pat_subgroup, a.pat_host, a.created_at, a.created_by
             FROM assignments a LEFT JOIN users u ON u.id = a.user_id LEFT JOIN groups g ON g.id = a.group_id
             WHERE (?1 IS NULL AND ?2 IS NULL) OR a.user_id = ?1 OR a.group_id = ?2
             ORDER BY a.id",
        )?;
        let v = st
            .query_map(params![uid, gid], |r| {
                let user: Option<String> = r.get(1)?;
                let group: Option<String> = r.get(2)?;
                let subject = match user {
                    Some(name) => Subject { kind: SubjectKind::User, name },
                    None => Subject { kind: SubjectKind::Group, name: group.unwrap_or_default() },
                };
                Ok(Assignment {
                    id: r.get(0)?,
                    subject,
                    pattern: SourcePattern::new(
                        &r.get::<_, String>(3)?,
                        &r.get::<_, String>(4)?,
                        &r.get::<_, String>(5)?,
                    ),
                    created_at: rfc3339(r.get(6)?),
                    created_by: r.get(7)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(v)
    }

    /// Assigns `pattern` to a user or group.
    pub fn assign(&self, actor: &Actor, subject: &Subject, pattern: SourcePattern) -> Result<Assignment, UsersError> {
        check_glob("pattern.group", &pattern.group)?;
        check_glob("pattern.subgroup", &pattern.subgroup)?;
        check_glob("pattern.host", &pattern.host)?;
        let now = self.clock.now_ms();
        let id = self.tx(|tx| {
            let (uid, gid) = Self::subject_ids(tx, subject)?;
            tx.execute(
                "INSERT INTO assignments(user_id, group_id, pat_group, pat_subgroup, pat_host, created_at, created_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![uid, gid, pattern.group.0, pattern.subgroup.0, pattern.host.0, now, actor.name],
            )
            .map_err(|e| conflict_on_unique(e, || format!("{subject} already has this assignment")))?;
            let id = tx.last_insert_rowid();
            audit::write(
                tx,
                now,
                actor,
                "assignment.create",
                &subject.to_string(),
                json!({"id": id, "pattern": pattern}),
                Outcome::Success,
            )?;
            Ok(id)
        })?;
        self.list_assignments(Some(subject))?
            .into_iter()
            .find(|a| a.id == id)
            .ok_or_else(|| UsersError::Internal("assignment vanished".into()))
    }

    /// Removes an assignment by id.
    pub fn unassign(&self, actor: &Actor, id: i64) -> Result<(), UsersError> {
        let a = self
            .list_assignments(None)?
            .into_iter()
            .find(|a| a.id == id)
            .ok_or_else(|| UsersError::NotFound(format!("no assignment {id}")))?;
        let now = self.clock.now_ms();
        self.tx(|tx| {
            tx.execute("DELETE FROM assignments WHERE id = ?1", [id])?;
            audit::write(
                tx,
                now,
                actor,
                "assignment.delete",
                &a.subject.to_string(),
                json!({"id": id, "pattern": a.pattern}),
                Outcome::Success,
            )
        })
    }

    /// Removes the assignment of exactly `pattern` to `subject` (the CLI's `unassign`).
    pub fn unassign_pattern(
        &self,
        actor: &Actor,
        subject: &Subject,
        pattern: &SourcePattern,
    ) -> Result<(), UsersError> {
        let a = self
            .list_assignments(Some(subject))?
            .into_iter()
            .find(|a| &a.pattern == pattern)
            .ok_or_else(|| UsersError::NotFound(format!("{subject} has no such assignment")))?;
        self.unassign(actor, a.id)
    }

    // ---- API tokens --------------------------------------------------------

    fn token_dto(r: &rusqlite::Row<'_>) -> rusqlite::Result<ApiToken> {
        let scope: String = r.get(3)?;
        Ok(ApiToken {
            id: r.get(0)?,
            name: r.get(1)?,
            owner: r.get(2)?,
            scope: if scope == "admin" { TokenScope::Admin } else { TokenScope::Search },
            created_at: rfc3339(r.get(4)?),
            expires_at: r.get::<_, Option<i64>>(5)?.map(rfc3339),
            last_used_at: r.get::<_, Option<i64>>(6)?.map(rfc3339),
        })
    }

    /// Tokens of `owner`, or all.
    pub fn list_tokens(&self, owner: Option<&str>) -> Result<Vec<ApiToken>, UsersError> {
        let conn = self.conn();
        let owner = owner.map(normalize_username);
        let mut st = conn.prepare(
            "SELECT t.id, t.name, u.username, t.scope, t.created_at, t.expires_at, t.last_used_at
             FROM api_tokens t JOIN users u ON u.id = t.user_id
             WHERE ?1 IS NULL OR u.username = ?1 ORDER BY t.id",
        )?;
        let v = st.query_map([owner], Self::token_dto)?.collect::<Result<Vec<_>, _>>()?;
        Ok(v)
    }

    /// Creates a token for `owner`; returns it and its secret (shown once).
    pub fn create_token(
        &self,
        actor: &Actor,
        owner: &str,
        name: &str,
        scope: TokenScope,
        expires_in: Option<Duration>,
    ) -> Result<(ApiToken, String), UsersError> {
        let name = name.trim();
        if name.is_empty() || name.len() > 100 {
            return Err(UsersError::field("name", "token name must be 1-100 characters"));
        }
        let public = secret::random_hex(8)?;
        let raw = secret::random_hex(32)?;
        let secret_str = format!("slt_{public}_{raw}");
        let now = self.clock.now_ms();
        let expires = expires_in.map(|d| now + i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2));
        let id = self.tx(|tx| {
            let user = must_user(tx, owner)?;
            if scope == TokenScope::Admin && user.user_type != UserType::Admin {
                return Err(UsersError::Forbidden("only administrators may hold tokens with scope admin".into()));
            }
            tx.execute(
                "INSERT INTO api_tokens(public_id, secret_hash, user_id, name, scope, created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![public, secret::sha256_hex(raw.as_bytes()), user.id, name, scope.as_str(), now, expires],
            )?;
            let id = tx.last_insert_rowid();
            audit::write(
                tx,
                now,
                actor,
                "token.create",
                &user.username,
                json!({"id": id, "name": name, "scope": scope, "expires_at": expires.map(rfc3339)}),
                Outcome::Success,
            )?;
            Ok(id)
        })?;
        let token = self
            .list_tokens(None)?
            .into_iter()
            .find(|t| t.id == id)
            .ok_or_else(|| UsersError::Internal("token vanished".into()))?;
        Ok((token, secret_str))
    }

    /// Revokes token `id`; with `owner`, only if it is theirs (else `NotFound`).
    pub fn revoke_token(&self, actor: &Actor, id: i64, owner: Option<&str>) -> Result<(), UsersError> {
        let t = self
            .list_tokens(owner)?
            .into_iter()
            .find(|t| t.id == id)
            .ok_or_else(|| UsersError::NotFound(format!("no token {id}")))?;
        let now = self.clock.now_ms();
        self.tx(|tx| {
            tx.execute("DELETE FROM api_tokens WHERE id = ?1", [id])?;
            audit::write(tx, now, actor, "token.revoke", &t.owner, json!({"id": id, "name": t.name}), Outcome::Success)
        })
    }
}
