//! sluice-users: who may use a node and what they may read.
//!
//! Users (types admin / operator / viewer), groups, **assignments** of log
//! sources (group / subgroup / host globs) to users and groups, API tokens,
//! login sessions, TOTP two-factor, LDAP, the audit log, dashboards and saved
//! searches — all in one embedded SQLite database under the node's data dir
//! ([`db`], versioned migrations; `docs/specs/users-db.md`).
//!
//! [`Users`] is the one entry point, shared by the HTTP API (`sluice-api`)
//! and the `sluice user|group|assign|token` commands. Its methods are
//! synchronous (SQLite, argon2 and the LDAP client block): async callers run
//! them on a blocking thread. Authorization by user type and token scope is
//! the HTTP layer's job; this crate checks integrity (names, the last admin,
//! visibility and ownership of dashboards) and writes an [`audit`] record in
//! the same transaction as every change.
//!
//! A caller's [`Caller::principal`] carries their assignments (own ∪ groups')
//! as `sluice_query::Principal::allowed`; the store ANDs those patterns into
//! every query, so what a user may read is enforced below the API.

pub mod accounts;
pub mod audit;
pub mod clock;
pub mod config;
pub mod content;
pub mod db;
pub mod error;
pub mod ldap;
pub mod limiter;
pub mod login;
pub mod model;
pub mod password;
pub mod secret;
pub mod totp;

use std::path::Path;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use rusqlite::{Connection, OptionalExtension as _, Transaction};
use sluice_query::{Principal, SourcePattern};

pub use audit::{Actor, ActorKind, AuditQuery};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{AuthConfig, LdapSettings, LdapTls};
pub use error::{AuthFailure, LoginError, UsersError};
pub use login::{Caller, Factor, LoginAttempt, LoginOutcome, Stage, Via};
pub use model::{ApiToken, Assignment, AuditRecord, Group, Sharing, Subject, SubjectKind, TokenScope, User, UserType};

/// The users service over one metadata database.
pub struct Users {
    conn: Mutex<Connection>,
    cfg: AuthConfig,
    clock: Arc<dyn Clock>,
    limiter: limiter::Limiter,
    dummy_hash: String,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Users").field("db", &self.cfg.db).finish_non_exhaustive()
    }
}

/// A user row as stored.
#[derive(Debug, Clone)]
pub(crate) struct UserRow {
    pub id: i64,
    pub username: String,
    pub display_name: String,
    pub user_type: UserType,
    pub source: model::UserSource,
    pub password_hash: Option<String>,
    pub disabled: bool,
    pub totp_secret: Option<String>,
    pub totp_pending: Option<String>,
    pub totp_last_step: i64,
    pub last_login: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub password_one_time: bool,
}

pub(crate) const USER_COLS: &str = "id, username, display_name, type, source, password_hash, disabled, totp_secret, \
     totp_pending, totp_last_step, last_login, created_at, updated_at, password_one_time";

impl UserRow {
    pub(crate) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        let t: String = r.get(3)?;
        let s: String = r.get(4)?;
        Ok(Self {
            id: r.get(0)?,
            username: r.get(1)?,
            display_name: r.get(2)?,
            user_type: UserType::parse(&t).unwrap_or(UserType::Viewer),
            source: if s == "ldap" { model::UserSource::Ldap } else { model::UserSource::Local },
            password_hash: r.get(5)?,
            disabled: r.get::<_, i64>(6)? != 0,
            totp_secret: r.get(7)?,
            totp_pending: r.get(8)?,
            totp_last_step: r.get(9)?,
            last_login: r.get(10)?,
            created_at: r.get(11)?,
            updated_at: r.get(12)?,
            password_one_time: r.get::<_, i64>(13)? != 0,
        })
    }
}

/// The first administrator created on an empty database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bootstrap {
    /// Their name (`admin`).
    pub username: String,
    /// The password, when it was generated (to be shown once).
    pub generated_password: Option<String>,
}

impl Users {
    /// Opens (creating and migrating) the database of `cfg` under `data_dir`.
    pub fn open(cfg: &AuthConfig, data_dir: &Path) -> Result<Self, UsersError> {
        Self::open_with_clock(cfg, data_dir, Arc::new(SystemClock))
    }

    /// [`Users::open`] with a clock (tests move time with a [`ManualClock`]).
    pub fn open_with_clock(cfg: &AuthConfig, data_dir: &Path, clock: Arc<dyn Clock>) -> Result<Self, UsersError> {
        let conn = db::open(&cfg.db_path(data_dir))?;
        Self::with_connection(conn, cfg, clock)
    }

    /// An in-memory database (tests).
    pub fn open_in_memory(cfg: &AuthConfig, clock: Arc<dyn Clock>) -> Result<Self, UsersError> {
        Self::with_connection(db::open_in_memory()?, cfg, clock)
    }

    fn with_connection(conn: Connection, cfg: &AuthConfig, clock: Arc<dyn Clock>) -> Result<Self, UsersError> {
        Ok(Self {
            conn: Mutex::new(conn),
            limiter: limiter::Limiter::new(cfg.lockout.clone(), cfg.login_rate.clone()),
            cfg: cfg.clone(),
            clock,
            dummy_hash: password::dummy_hash()?,
        })
    }

    /// The `[auth]` settings this service runs with.
    pub fn config(&self) -> &AuthConfig {
        &self.cfg
    }

    /// Now, per the service's clock (ms).
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock()
    }

    /// Runs `f` in one transaction (committed when it returns `Ok`).
    pub(crate) fn tx<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T, UsersError>) -> Result<T, UsersError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Whether the database has no users yet.
    pub fn is_empty(&self) -> Result<bool, UsersError> {
        let n: i64 = self.conn().query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))?;
        Ok(n == 0)
    }

    /// On an empty database, creates the administrator `admin`, assigned
    /// every source (`*/*/*`), with `password` or a generated one (returned
    /// once, to be printed). `None` when there are users already.
    pub fn bootstrap_admin(&self, password: Option<String>) -> Result<Option<Bootstrap>, UsersError> {
        if !self.is_empty()? {
            return Ok(None);
        }
        let (password, generated) = match password {
            Some(p) => (p, None),
            None => {
                let p = secret::random_password(20)?;
                (p.clone(), Some(p))
            }
        };
        let actor = Actor::system();
        self.create_user(
            &actor,
            accounts::NewUser {
                username: "admin".into(),
                display_name: Some("Administrator".into()),
                user_type: UserType::Admin,
                password: Some(password),
                groups: Vec::new(),
            },
        )?;
        self.assign(&actor, &Subject { kind: SubjectKind::User, name: "admin".into() }, SourcePattern::all())?;
        if generated.is_some() {
            self.conn().execute("UPDATE users SET password_one_time = 1 WHERE username = 'admin'", [])?;
        }
        Ok(Some(Bootstrap { username: "admin".into(), generated_password: generated }))
    }

    /// A stored setting (JSON text).
    pub(crate) fn setting(conn: &Connection, key: &str) -> Result<Option<String>, UsersError> {
        Ok(conn.query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| r.get(0)).optional()?)
    }

    /// The principal of user `id`: their assignments and their groups'.
    pub(crate) fn allowed(conn: &Connection, user_id: i64) -> Result<Vec<SourcePattern>, UsersError> {
        let mut st = conn.prepare_cached(
            "SELECT DISTINCT pat_group, pat_subgroup, pat_host FROM assignments
             WHERE user_id = ?1 OR group_id IN (SELECT group_id FROM memberships WHERE user_id = ?1)
             ORDER BY 1, 2, 3",
        )?;
        let rows = st.query_map([user_id], |r| {
            Ok(SourcePattern::new(&r.get::<_, String>(0)?, &r.get::<_, String>(1)?, &r.get::<_, String>(2)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The principal of a user by name (the CLI's `sluice user show`, tests).
    pub fn principal_of(&self, username: &str) -> Result<Principal, UsersError> {
        let conn = self.conn();
        let row = accounts::user_row(&conn, &model::normalize_username(username))?
            .ok_or_else(|| UsersError::NotFound(format!("no user {username:?}")))?;
        Ok(Principal::new(row.username, Self::allowed(&conn, row.id)?))
    }
}

/// Maps a unique-constraint violation to [`UsersError::Conflict`].
pub(crate) fn conflict_on_unique(e: rusqlite::Error, msg: impl FnOnce() -> String) -> UsersError {
    match &e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
            UsersError::Conflict(msg())
        }
        _ => UsersError::Db(e),
    }
}
