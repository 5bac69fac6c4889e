//! The audit log: one record per user, group, membership, assignment, token,
//! password, TOTP, settings and sharing change, and per login, failed login,
//! lockout and logout — who, what, on what, when, from where, with what
//! outcome.
//!
//! Records live in the metadata database's `audit` table, written in the
//! same transaction as the change they describe (a change without its record
//! cannot be committed), and are searched with [`Users::audit_query`]
//! (actor, action prefix, target, free text, time range; newest first,
//! keyset-paginated). Why SQLite and not the event store:
//! `docs/adr/0021-audit-log-in-sqlite.md`.

use rusqlite::{params, Connection, ToSql};
use serde_json::Value;

use crate::clock::rfc3339;
use crate::error::UsersError;
use crate::model::AuditRecord;
use crate::Users;

/// Who did something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// User name, `cli:<unix user>`, `system`, or a name as typed at login.
    pub name: String,
    /// What kind of actor.
    pub kind: ActorKind,
    /// Client address.
    pub ip: Option<String>,
    /// Client user agent.
    pub user_agent: Option<String>,
}

/// See [`Actor::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActorKind {
    /// A logged-in user.
    User,
    /// A user's API token.
    Token,
    /// The `sluice` command line on the node.
    Cli,
    /// The node itself (bootstrap, LDAP sync).
    System,
    /// Not authenticated (failed logins).
    Anonymous,
}

impl ActorKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Token => "token",
            Self::Cli => "cli",
            Self::System => "system",
            Self::Anonymous => "anonymous",
        }
    }
}

impl Actor {
    /// The node itself.
    pub fn system() -> Self {
        Self { name: "system".into(), kind: ActorKind::System, ip: None, user_agent: None }
    }

    /// The command line, named after the Unix user running it.
    pub fn cli() -> Self {
        let who = std::env::var("SUDO_USER").or_else(|_| std::env::var("USER")).unwrap_or_else(|_| "unknown".into());
        Self { name: format!("cli:{who}"), kind: ActorKind::Cli, ip: None, user_agent: None }
    }

    /// A user acting through the API.
    pub fn user(name: &str, kind: ActorKind, ip: Option<String>, user_agent: Option<String>) -> Self {
        Self { name: name.to_string(), kind, ip, user_agent }
    }
}

/// `success` or `failure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It happened.
    Success,
    /// It was refused.
    Failure,
}

/// Writes one record (inside the caller's transaction).
pub(crate) fn write(
    conn: &Connection,
    now: i64,
    actor: &Actor,
    action: &str,
    target: &str,
    detail: Value,
    outcome: Outcome,
) -> Result<(), UsersError> {
    let detail = if detail.is_null() { Value::Object(Default::default()) } else { detail };
    conn.prepare_cached(
        "INSERT INTO audit(time, actor, actor_kind, action, target, detail, outcome, ip, user_agent)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        now,
        actor.name,
        actor.kind.as_str(),
        action,
        target,
        detail.to_string(),
        match outcome {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
        },
        actor.ip,
        actor.user_agent.as_deref().map(|u| &u[..u.len().min(floor_char_boundary(u, 512))]),
    ])?;
    Ok(())
}

fn floor_char_boundary(s: &str, max: usize) -> usize {
    let mut i = max.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Filters of [`Users::audit_query`].
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Exact actor name.
    pub actor: Option<String>,
    /// Action prefix (`user.` matches `user.create`).
    pub action: Option<String>,
    /// Exact target.
    pub target: Option<String>,
    /// Substring of action, target or detail (case-insensitive for ASCII).
    pub q: Option<String>,
    /// From (ms, inclusive).
    pub from_ms: Option<i64>,
    /// To (ms, exclusive).
    pub to_ms: Option<i64>,
    /// Page size (1–1000; default 100).
    pub size: Option<usize>,
    /// Records with an id below this (the previous page's `next`).
    pub before: Option<i64>,
}

/// Most records per audit page.
pub const MAX_AUDIT_PAGE: usize = 1000;

fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Users {
    /// Audit records matching `q`, newest first, and the cursor of the next page.
    pub fn audit_query(&self, q: &AuditQuery) -> Result<(Vec<AuditRecord>, Option<String>), UsersError> {
        let size = q.size.unwrap_or(100);
        if size == 0 || size > MAX_AUDIT_PAGE {
            return Err(UsersError::field("size", format!("size must be between 1 and {MAX_AUDIT_PAGE}")));
        }
        let mut sql = String::from(
            "SELECT id, time, actor, actor_kind, action, target, detail, outcome, ip, user_agent FROM audit WHERE 1 = 1",
        );
        let mut args: Vec<Box<dyn ToSql>> = Vec::new();
        let mut arg = |sql: &mut String, clause: &str, v: Box<dyn ToSql>| {
            args.push(v);
            sql.push_str(&clause.replace('?', &format!("?{}", args.len())));
        };
        if let Some(a) = &q.actor {
            arg(&mut sql, " AND actor = ?", Box::new(a.clone()));
        }
        if let Some(a) = &q.action {
            arg(&mut sql, " AND action LIKE ? ESCAPE '\\'", Box::new(format!("{}%", like_escape(a))));
        }
        if let Some(t) = &q.target {
            arg(&mut sql, " AND target = ?", Box::new(t.clone()));
        }
        if let Some(text) = &q.q {
            let pat = format!("%{}%", like_escape(text));
            arg(
                &mut sql,
                " AND (action LIKE ? ESCAPE '\\' OR target LIKE ? ESCAPE '\\' OR detail LIKE ? ESCAPE '\\' OR actor LIKE ? ESCAPE '\\')",
                Box::new(pat),
            );
        }
        if let Some(f) = q.from_ms {
            arg(&mut sql, " AND time >= ?", Box::new(f));
        }
        if let Some(t) = q.to_ms {
            arg(&mut sql, " AND time < ?", Box::new(t));
        }
        if let Some(b) = q.before {
            arg(&mut sql, " AND id < ?", Box::new(b));
        }
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", size + 1));
        let conn = self.conn();
        let mut st = conn.prepare(&sql)?;
        let params: Vec<&dyn ToSql> = args.iter().map(|b| b.as_ref()).collect();
        let mut records = st
            .query_map(params.as_slice(), |r| {
                let detail: String = r.get(6)?;
                Ok(AuditRecord {
                    id: r.get(0)?,
                    time: rfc3339(r.get(1)?),
                    actor: r.get(2)?,
                    actor_kind: r.get(3)?,
                    action: r.get(4)?,
                    target: r.get(5)?,
                    detail: serde_json::from_str(&detail).unwrap_or(Value::String(detail)),
                    outcome: r.get(7)?,
                    ip: r.get(8)?,
                    user_agent: r.get(9)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let next = if records.len() > size {
            records.truncate(size);
            records.last().map(|r| r.id.to_string())
        } else {
            None
        };
        Ok((records, next))
    }
}
