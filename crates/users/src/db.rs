//! The metadata database: one SQLite file (default `<data_dir>/users.db`)
//! and its versioned migrations.
//!
//! `PRAGMA user_version` holds the number of migrations applied. On open,
//! every migration after it runs in one transaction each, in order, and bumps
//! the version in the same transaction — a crash leaves the database at the
//! last complete migration. A database whose version is higher than this
//! binary knows is refused (an older binary must not write a newer schema).
//! Migrations are append-only: a released one is never edited.
//! The schema is described in `docs/specs/users-db.md`.

use std::path::Path;

use rusqlite::Connection;

use crate::error::UsersError;

/// The migrations, in order; `MIGRATIONS[i]` brings version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: users, groups, memberships, assignments, sessions, tokens, TOTP
    // recovery codes, audit log, dashboards and saved searches, settings.
    r#"
CREATE TABLE users (
    id              INTEGER PRIMARY KEY,
    username        TEXT NOT NULL UNIQUE,
    display_name    TEXT NOT NULL DEFAULT '',
    type            TEXT NOT NULL CHECK (type IN ('admin', 'operator', 'viewer')),
    source          TEXT NOT NULL CHECK (source IN ('local', 'ldap')),
    password_hash   TEXT,
    disabled        INTEGER NOT NULL DEFAULT 0,
    totp_secret     TEXT,
    totp_pending    TEXT,
    totp_last_step  INTEGER NOT NULL DEFAULT 0,
    last_login      INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE TABLE groups (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE,
    description     TEXT NOT NULL DEFAULT '',
    require_totp    INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE TABLE memberships (
    user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    group_id        INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    origin          TEXT NOT NULL CHECK (origin IN ('manual', 'ldap')),
    PRIMARY KEY (user_id, group_id, origin)
);
CREATE INDEX memberships_group ON memberships(group_id);
CREATE TABLE assignments (
    id              INTEGER PRIMARY KEY,
    user_id         INTEGER REFERENCES users(id) ON DELETE CASCADE,
    group_id        INTEGER REFERENCES groups(id) ON DELETE CASCADE,
    pat_group       TEXT NOT NULL,
    pat_subgroup    TEXT NOT NULL,
    pat_host        TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    created_by      TEXT NOT NULL,
    CHECK ((user_id IS NULL) <> (group_id IS NULL))
);
CREATE UNIQUE INDEX assignments_user ON assignments(user_id, pat_group, pat_subgroup, pat_host) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX assignments_group ON assignments(group_id, pat_group, pat_subgroup, pat_host) WHERE group_id IS NOT NULL;
CREATE TABLE sessions (
    id_hash         TEXT PRIMARY KEY,
    user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    stage           TEXT NOT NULL CHECK (stage IN ('full', 'totp', 'enroll')),
    created_at      INTEGER NOT NULL,
    last_seen       INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    ip              TEXT,
    user_agent      TEXT
);
CREATE INDEX sessions_user ON sessions(user_id);
CREATE TABLE api_tokens (
    id              INTEGER PRIMARY KEY,
    public_id       TEXT NOT NULL UNIQUE,
    secret_hash     TEXT NOT NULL,
    user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    scope           TEXT NOT NULL CHECK (scope IN ('search', 'admin')),
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER,
    last_used_at    INTEGER
);
CREATE TABLE recovery_codes (
    user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    code_hash       TEXT NOT NULL,
    used_at         INTEGER,
    PRIMARY KEY (user_id, code_hash)
);
CREATE TABLE audit (
    id              INTEGER PRIMARY KEY,
    time            INTEGER NOT NULL,
    actor           TEXT NOT NULL,
    actor_kind      TEXT NOT NULL,
    action          TEXT NOT NULL,
    target          TEXT NOT NULL,
    detail          TEXT NOT NULL,
    outcome         TEXT NOT NULL,
    ip              TEXT,
    user_agent      TEXT
);
CREATE INDEX audit_time ON audit(time);
CREATE TABLE objects (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('dashboard', 'saved_search')),
    owner_id        INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    title           TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    share_everyone  INTEGER NOT NULL DEFAULT 0,
    doc             TEXT NOT NULL,
    version         INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE TABLE object_shares (
    object_id       INTEGER NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
    group_id        INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    PRIMARY KEY (object_id, group_id)
);
CREATE TABLE settings (
    key             TEXT PRIMARY KEY,
    value           TEXT NOT NULL
);
"#,
    // 2: the first administrator's generated password is one-time: the UI
    // asks to replace it until it is (`users.password_one_time`).
    "ALTER TABLE users ADD COLUMN password_one_time INTEGER NOT NULL DEFAULT 0;",
];

/// Opens (creating) the database at `path` and migrates it.
pub fn open(path: &Path) -> Result<Connection, UsersError> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(|e| UsersError::Internal(format!("create {}: {e}", dir.display())))?;
        }
    }
    let conn = Connection::open(path)?;
    restrict_permissions(path);
    prepare(conn, &path.display().to_string())
}

/// An in-memory database (tests).
pub fn open_in_memory() -> Result<Connection, UsersError> {
    prepare(Connection::open_in_memory()?, ":memory:")
}

/// The file holds password hashes and TOTP secrets: owner-only.
fn restrict_permissions(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        tracing::warn!(path = %path.display(), error = %e, "cannot chmod 600 the metadata database");
    }
}

fn prepare(mut conn: Connection, name: &str) -> Result<Connection, UsersError> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // WAL lets the CLI read while a node writes; foreign keys give cascades.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    migrate(&mut conn, name)?;
    Ok(conn)
}

/// Applies every migration after the database's `user_version`.
pub fn migrate(conn: &mut Connection, name: &str) -> Result<(), UsersError> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let known = MIGRATIONS.len() as i64;
    if version > known {
        return Err(UsersError::Corrupt {
            path: name.to_string(),
            message: format!("schema version {version} is newer than this binary knows ({known}); upgrade sluice"),
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(usize::try_from(version).unwrap_or(0)) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)?;
        tx.commit()?;
        tracing::info!(database = name, version = i + 1, "metadata database migrated");
    }
    Ok(())
}

/// The schema version of an open database.
pub fn version(conn: &Connection) -> Result<i64, UsersError> {
    Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_once_and_refuses_newer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/users.db");
        let conn = open(&path).unwrap();
        assert_eq!(version(&conn).unwrap(), MIGRATIONS.len() as i64);
        drop(conn);
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        // Reopening runs nothing and keeps the data.
        let conn = open(&path).unwrap();
        conn.execute("INSERT INTO settings(key, value) VALUES ('k', 'v')", []).unwrap();
        drop(conn);
        let conn = open(&path).unwrap();
        let v: String = conn.query_row("SELECT value FROM settings WHERE key = 'k'", [], |r| r.get(0)).unwrap();
        assert_eq!(v, "v");
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let e = open(&path).unwrap_err().to_string();
        assert!(e.ends_with("schema version 99 is newer than this binary knows (2); upgrade sluice"), "{e}");
    }

    /// A database of version 1 (before `password_one_time`) keeps its users,
    /// who are not asked to replace their password.
    #[test]
    fn version_1_gains_password_one_time_unset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.db");
        let mut conn = Connection::open(&path).unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute_batch(MIGRATIONS[0]).unwrap();
        tx.pragma_update(None, "user_version", 1).unwrap();
        tx.execute(
            "INSERT INTO users(username, type, source, created_at, updated_at) VALUES ('ann', 'viewer', 'local', 0, 0)",
            [],
        )
        .unwrap();
        tx.commit().unwrap();
        drop(conn);
        let conn = open(&path).unwrap();
        assert_eq!(version(&conn).unwrap(), 2);
        let one_time: i64 =
            conn.query_row("SELECT password_one_time FROM users WHERE username = 'ann'", [], |r| r.get(0)).unwrap();
        assert_eq!(one_time, 0);
    }
}
