//! Authentication: password / LDAP login with rate limit and lockout, the
//! TOTP second factor, sessions (idle and absolute timeouts), user API
//! tokens, and the self-service calls of a logged-in user (password, TOTP
//! enrolment, recovery codes).
//!
//! Session ids and token secrets are random 256-bit values; the database
//! holds only their SHA-256. A session's CSRF token is derived from its id
//! ([`csrf_token`]), so it needs no storage and a token of one session is
//! useless for another. A login of a user with TOTP creates a *pending*
//! session (stage `totp`, five minutes) that authenticates nothing until the
//! second factor replaces it with a full one; a user who must use TOTP but
//! has not enrolled gets a session of stage `enroll` that the HTTP layer
//! limits to enrolment.

use rusqlite::{params, OptionalExtension as _};
use serde_json::json;
use sluice_query::{Principal, SourcePattern};

use crate::accounts::{must_user, user_row, user_row_by_id};
use crate::audit::{self, Actor, ActorKind, Outcome};
use crate::error::{AuthFailure, LoginError, UsersError};
use crate::model::{normalize_username, TokenScope, User, UserSource, UserType};
use crate::secret::{self, random_hex, sha256_hex, sha256_parts};
use crate::{ldap, password, totp, UserRow, Users};

/// How long a pending (second factor) login lasts.
pub const PENDING_LOGIN_MS: i64 = 5 * 60 * 1000;
/// A session's `last_seen` is written at most this often.
pub const TOUCH_MS: i64 = 5_000;
/// A token's `last_used_at` is written at most this often.
pub const TOKEN_TOUCH_MS: i64 = 60_000;

/// What a session may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Fully authenticated.
    Full,
    /// Password accepted, TOTP code pending (authenticates nothing).
    Totp,
    /// Must enrol TOTP before anything else.
    Enroll,
}

impl Stage {
    fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Totp => "totp",
            Self::Enroll => "enroll",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "full" => Self::Full,
            "enroll" => Self::Enroll,
            _ => Self::Totp,
        }
    }
}

/// A login as received.
#[derive(Debug, Clone, Default)]
pub struct LoginAttempt {
    /// As typed.
    pub username: String,
    /// As typed.
    pub password: String,
    /// Client address (rate limit key, audit).
    pub ip: Option<String>,
    /// Client user agent (audit).
    pub user_agent: Option<String>,
}

/// A successful login step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginOutcome {
    /// The new session id (the cookie value; stored only hashed).
    pub session_id: String,
    /// What the session may do.
    pub stage: Stage,
    /// The session's CSRF token.
    pub csrf_token: String,
    /// Normalized user name.
    pub username: String,
    /// Seconds the session (or pending login) lasts at most.
    pub expires_in: u64,
}

/// The second factor.
#[derive(Debug, Clone)]
pub enum Factor {
    /// A 6-digit TOTP code.
    Code(String),
    /// A recovery code.
    Recovery(String),
}

/// How a request authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// A session cookie.
    Session {
        /// Stage (never [`Stage::Totp`] here).
        stage: Stage,
        /// SHA-256 of the session id.
        id_hash: String,
        /// Login time (ms).
        created_at: i64,
        /// Absolute expiry (ms).
        expires_at: i64,
        /// Idle expiry as of this request (ms).
        idle_expires_at: i64,
    },
    /// A user API token.
    Token {
        /// Token id.
        id: i64,
        /// Its scope.
        scope: TokenScope,
    },
}

/// An authenticated user and what they may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// User id.
    pub user_id: i64,
    /// User name.
    pub username: String,
    /// Type.
    pub user_type: UserType,
    /// Session or token.
    pub via: Via,
    /// Source patterns: own assignments ∪ groups'.
    pub allowed: Vec<SourcePattern>,
}

impl Caller {
    /// The principal every search runs as.
    pub fn principal(&self) -> Principal {
        Principal::new(self.username.clone(), self.allowed.clone())
    }

    /// The actor of audit records for this caller.
    pub fn actor(&self, ip: Option<String>, user_agent: Option<String>) -> Actor {
        let kind = match self.via {
            Via::Session { .. } => ActorKind::User,
            Via::Token { .. } => ActorKind::Token,
        };
        Actor::user(&self.username, kind, ip, user_agent)
    }
}

/// `(id, secret_hash, user_id, scope, expires_at, last_used_at)` of `api_tokens`.
type TokenRow = (i64, String, i64, String, Option<i64>, Option<i64>);

/// The CSRF token of a session (derived from its id).
pub fn csrf_token(session_id: &str) -> String {
    sha256_parts(&[b"sluice-csrf-v1", session_id.as_bytes()])
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}

impl Users {
    fn create_session(
        &self,
        conn: &rusqlite::Connection,
        user_id: i64,
        stage: Stage,
        ip: Option<&str>,
        user_agent: Option<&str>,
    ) -> Result<(String, i64), UsersError> {
        let now = self.clock.now_ms();
        let raw = random_hex(32)?;
        let life = if stage == Stage::Totp { PENDING_LOGIN_MS } else { ms(self.cfg.session.absolute_timeout.0) };
        conn.execute(
            "INSERT INTO sessions(id_hash, user_id, stage, created_at, last_seen, expires_at, ip, user_agent)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7)",
            params![sha256_hex(raw.as_bytes()), user_id, stage.as_str(), now, now + life, ip, user_agent],
        )?;
        // Sweep expired sessions now and then (cheap with the small table).
        conn.execute("DELETE FROM sessions WHERE expires_at <= ?1", [now])?;
        Ok((raw, life))
    }

    /// The stage a fresh login of `row` gets after the password.
    fn stage_after_password(&self, conn: &rusqlite::Connection, row: &UserRow) -> Result<Stage, UsersError> {
        Ok(if row.totp_secret.is_some() {
            Stage::Totp
        } else if self.totp_required(conn, row)? {
            Stage::Enroll
        } else {
            Stage::Full
        })
    }

    /// `Err(Locked)` while `name` is locked for `addr` — unless an
    /// administrator unlocked the name since the lock began: through the API
    /// (which resets the limiter at once) or with `sluice user unlock` in
    /// another process, which only leaves its `user.unlock` audit record.
    fn check_lock(&self, name: &str, addr: &str, now: i64) -> Result<(), LoginError> {
        let Err((retry_after, locked_at)) = self.limiter.check(name, addr, now) else { return Ok(()) };
        let unlocked: bool = self
            .conn()
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM audit WHERE time >= ?1 AND action = 'user.unlock' AND target = ?2)",
                params![locked_at, name],
                |r| r.get(0),
            )
            .unwrap_or(false);
        if unlocked {
            self.limiter.reset(name);
            return Ok(());
        }
        Err(LoginError::Locked { retry_after })
    }

    fn login_failed(&self, actor: &Actor, name: &str, addr: &str, reason: &str) -> LoginError {
        let now = self.clock.now_ms();
        let locked = self.limiter.failure(name, addr, now);
        let res = self.tx(|tx| {
            audit::write(tx, now, actor, "auth.login_failed", name, json!({"reason": reason}), Outcome::Failure)?;
            if locked {
                audit::write(
                    tx,
                    now,
                    actor,
                    "auth.locked",
                    name,
                    json!({"for_seconds": self.cfg.lockout.duration.0.as_secs()}),
                    Outcome::Failure,
                )?;
            }
            Ok(())
        });
        if let Err(e) = res {
            tracing::error!(error = %e, "audit: cannot record a failed login");
        }
        LoginError::InvalidCredentials
    }

    /// Step one: user name and password (local, or LDAP for LDAP users and
    /// unknown names when LDAP is configured).
    pub fn login(&self, a: &LoginAttempt) -> Result<LoginOutcome, LoginError> {
        let now = self.clock.now_ms();
        let addr = a.ip.clone().unwrap_or_else(|| "unknown".into());
        self.limiter.attempt(&addr, now).map_err(|retry_after| LoginError::RateLimited { retry_after })?;
        let name = normalize_username(&a.username);
        let anon = Actor::user(&name, ActorKind::Anonymous, a.ip.clone(), a.user_agent.clone());
        self.check_lock(&name, &addr, now)?;
        if name.is_empty() || a.password.is_empty() || a.password.len() > password::MAX_PASSWORD_BYTES {
            password::verify(&a.password, &self.dummy_hash);
            return Err(self.login_failed(&anon, &name, &addr, "malformed"));
        }
        let row = user_row(&self.conn(), &name)?;
        let row = match row {
            Some(r) if r.source == UserSource::Local => {
                let ok = password::verify(&a.password, r.password_hash.as_deref().unwrap_or(&self.dummy_hash));
                if !ok || r.password_hash.is_none() {
                    return Err(self.login_failed(&anon, &name, &addr, "password"));
                }
                r
            }
            other => {
                // LDAP users, and unknown names when LDAP is configured. The
                // dummy verification keeps the cost at least a local check's.
                password::verify(&a.password, &self.dummy_hash);
                let Some(settings) = self.ldap_settings_effective()? else {
                    return Err(self.login_failed(
                        &anon,
                        &name,
                        &addr,
                        if other.is_some() { "ldap_off" } else { "password" },
                    ));
                };
                match ldap::authenticate(&settings, &name, &a.password) {
                    Ok(identity) => self.ldap_sync(&name, &identity, &settings)?,
                    Err(ldap::LdapError::Refused(why)) => {
                        tracing::debug!(user = %name, reason = %why, "ldap login refused");
                        return Err(self.login_failed(&anon, &name, &addr, "password"));
                    }
                    Err(ldap::LdapError::Unavailable(why)) => {
                        tracing::error!(user = %name, error = %why, "ldap server unavailable");
                        return Err(self.login_failed(&anon, &name, &addr, "ldap_unavailable"));
                    }
                }
            }
        };
        if row.disabled {
            return Err(self.login_failed(&anon, &name, &addr, "disabled"));
        }
        self.limiter.reset_for(&name, &addr);
        let outcome = self.tx(|tx| {
            let stage = self.stage_after_password(tx, &row)?;
            let (sid, life) = self.create_session(tx, row.id, stage, a.ip.as_deref(), a.user_agent.as_deref())?;
            if stage != Stage::Totp {
                tx.execute("UPDATE users SET last_login = ?1 WHERE id = ?2", params![now, row.id])?;
                let actor = Actor::user(&row.username, ActorKind::User, a.ip.clone(), a.user_agent.clone());
                audit::write(
                    tx,
                    now,
                    &actor,
                    "auth.login",
                    &row.username,
                    json!({"method": row.source.as_str(), "stage": stage.as_str()}),
                    Outcome::Success,
                )?;
            }
            Ok(LoginOutcome {
                csrf_token: csrf_token(&sid),
                session_id: sid,
                stage,
                username: row.username.clone(),
                expires_in: u64::try_from(life / 1000).unwrap_or(0),
            })
        });
        outcome.map_err(|e| LoginError::Internal(e.to_string()))
    }

    /// Step two: the TOTP or recovery code for a pending login.
    pub fn second_factor(
        &self,
        pending_session: &str,
        factor: &Factor,
        ip: Option<String>,
        user_agent: Option<String>,
    ) -> Result<LoginOutcome, LoginError> {
        let now = self.clock.now_ms();
        let addr = ip.clone().unwrap_or_else(|| "unknown".into());
        self.limiter.attempt(&addr, now).map_err(|retry_after| LoginError::RateLimited { retry_after })?;
        let hash = sha256_hex(pending_session.as_bytes());
        let row: Option<(i64, i64)> = self
            .conn()
            .query_row("SELECT user_id, expires_at FROM sessions WHERE id_hash = ?1 AND stage = 'totp'", [&hash], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        let Some((user_id, expires_at)) = row.filter(|(_, e)| *e > now) else {
            return Err(LoginError::NoPendingLogin);
        };
        let _ = expires_at;
        let user = user_row_by_id(&self.conn(), user_id)?.ok_or(LoginError::NoPendingLogin)?;
        self.check_lock(&user.username, &addr, now)?;
        let actor = Actor::user(&user.username, ActorKind::User, ip.clone(), user_agent.clone());
        let verified = self.tx(|tx| {
            let used = match factor {
                Factor::Code(code) => {
                    let Some(secret_b32) = &user.totp_secret else { return Ok(None) };
                    match totp::check(secret_b32, code, now)? {
                        Some(step) if i64::try_from(step).unwrap_or(0) > user.totp_last_step => {
                            tx.execute("UPDATE users SET totp_last_step = ?1 WHERE id = ?2", params![step as i64, user.id])?;
                            Some("totp")
                        }
                        _ => None,
                    }
                }
                Factor::Recovery(code) => {
                    let n = tx.execute(
                        "UPDATE recovery_codes SET used_at = ?1 WHERE user_id = ?2 AND code_hash = ?3 AND used_at IS NULL",
                        params![now, user.id, totp::recovery_hash(user.id, code)],
                    )?;
                    (n == 1).then_some("recovery_code")
                }
            };
            if let Some(method) = used {
                tx.execute("DELETE FROM sessions WHERE id_hash = ?1", [&hash])?;
                let stage = Stage::Full;
                let (sid, life) = self.create_session(tx, user.id, stage, ip.as_deref(), user_agent.as_deref())?;
                tx.execute("UPDATE users SET last_login = ?1 WHERE id = ?2", params![now, user.id])?;
                if method == "recovery_code" {
                    audit::write(tx, now, &actor, "auth.recovery_code_used", &user.username, json!({}), Outcome::Success)?;
                }
                audit::write(
                    tx,
                    now,
                    &actor,
                    "auth.login",
                    &user.username,
                    json!({"method": user.source.as_str(), "second_factor": method, "stage": "full"}),
                    Outcome::Success,
                )?;
                return Ok(Some(LoginOutcome {
                    csrf_token: csrf_token(&sid),
                    session_id: sid,
                    stage,
                    username: user.username.clone(),
                    expires_in: u64::try_from(life / 1000).unwrap_or(0),
                }));
            }
            Ok(None)
        });
        match verified {
            Ok(Some(o)) => {
                self.limiter.reset_for(&user.username, &addr);
                Ok(o)
            }
            Ok(None) => {
                let locked = self.limiter.failure(&user.username, &addr, now);
                let res = self.tx(|tx| {
                    audit::write(tx, now, &actor, "auth.totp_failed", &user.username, json!({}), Outcome::Failure)?;
                    if locked {
                        tx.execute("DELETE FROM sessions WHERE id_hash = ?1", [&hash])?;
                        audit::write(tx, now, &actor, "auth.locked", &user.username, json!({}), Outcome::Failure)?;
                    }
                    Ok(())
                });
                if let Err(e) = res {
                    tracing::error!(error = %e, "audit: cannot record a failed second factor");
                }
                Err(LoginError::InvalidCode)
            }
            Err(e) => Err(LoginError::Internal(e.to_string())),
        }
    }

    /// The caller of a session cookie; touches its idle timer.
    pub fn session(&self, session_id: &str) -> Result<Caller, AuthFailure> {
        let now = self.clock.now_ms();
        let hash = sha256_hex(session_id.as_bytes());
        let conn = self.conn();
        let row: Option<(i64, String, i64, i64, i64)> = conn
            .prepare_cached(
                "SELECT user_id, stage, created_at, last_seen, expires_at FROM sessions WHERE id_hash = ?1",
            )?
            .query_row([&hash], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .optional()?;
        let Some((user_id, stage, created_at, last_seen, expires_at)) = row else {
            return Err(AuthFailure::Unknown);
        };
        let idle = ms(self.cfg.session.idle_timeout.0);
        if now >= expires_at || now - last_seen >= idle {
            conn.execute("DELETE FROM sessions WHERE id_hash = ?1", [&hash])?;
            return Err(AuthFailure::Expired);
        }
        let stage = Stage::parse(&stage);
        if stage == Stage::Totp {
            return Err(AuthFailure::Pending);
        }
        let user = user_row_by_id(&conn, user_id).map_err(|e| AuthFailure::Internal(e.to_string()))?;
        let Some(user) = user.filter(|u| !u.disabled) else {
            conn.execute("DELETE FROM sessions WHERE id_hash = ?1", [&hash])?;
            return Err(AuthFailure::Disabled);
        };
        if now - last_seen >= TOUCH_MS {
            conn.execute("UPDATE sessions SET last_seen = ?1 WHERE id_hash = ?2", params![now, hash])?;
        }
        let allowed = Self::allowed(&conn, user.id).map_err(|e| AuthFailure::Internal(e.to_string()))?;
        Ok(Caller {
            user_id: user.id,
            username: user.username,
            user_type: user.user_type,
            via: Via::Session {
                stage,
                id_hash: hash,
                created_at,
                expires_at,
                idle_expires_at: (now + idle).min(expires_at),
            },
            allowed,
        })
    }

    /// The caller of a user API token (`slt_<id>_<secret>`).
    pub fn token(&self, bearer: &str) -> Result<Caller, AuthFailure> {
        let now = self.clock.now_ms();
        let Some(rest) = bearer.strip_prefix("slt_") else { return Err(AuthFailure::Unknown) };
        let Some((public, raw)) = rest.split_once('_') else { return Err(AuthFailure::Unknown) };
        let conn = self.conn();
        let row: Option<TokenRow> = conn
            .prepare_cached(
                "SELECT id, secret_hash, user_id, scope, expires_at, last_used_at FROM api_tokens WHERE public_id = ?1",
            )?
            .query_row([public], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
            .optional()?;
        let presented = sha256_hex(raw.as_bytes());
        let Some((id, stored, user_id, scope, expires_at, last_used)) = row else {
            // Same work as a hit.
            let _ = secret::ct_eq(presented.as_bytes(), presented.as_bytes());
            return Err(AuthFailure::Unknown);
        };
        if !secret::ct_eq(presented.as_bytes(), stored.as_bytes()) {
            return Err(AuthFailure::Unknown);
        }
        if expires_at.is_some_and(|e| now >= e) {
            return Err(AuthFailure::Expired);
        }
        let user = user_row_by_id(&conn, user_id).map_err(|e| AuthFailure::Internal(e.to_string()))?;
        let Some(user) = user.filter(|u| !u.disabled) else { return Err(AuthFailure::Disabled) };
        if last_used.is_none_or(|t| now - t >= TOKEN_TOUCH_MS) {
            conn.execute("UPDATE api_tokens SET last_used_at = ?1 WHERE id = ?2", params![now, id])?;
        }
        let allowed = Self::allowed(&conn, user.id).map_err(|e| AuthFailure::Internal(e.to_string()))?;
        Ok(Caller {
            user_id: user.id,
            username: user.username,
            user_type: user.user_type,
            via: Via::Token { id, scope: if scope == "admin" { TokenScope::Admin } else { TokenScope::Search } },
            allowed,
        })
    }

    /// Ends a session (idempotent); audits when it existed.
    pub fn logout(&self, session_id: &str, ip: Option<String>, user_agent: Option<String>) -> Result<(), UsersError> {
        let now = self.clock.now_ms();
        let hash = sha256_hex(session_id.as_bytes());
        self.tx(|tx| {
            let user: Option<String> = tx
                .query_row(
                    "SELECT u.username FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = ?1",
                    [&hash],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(u) = user {
                tx.execute("DELETE FROM sessions WHERE id_hash = ?1", [&hash])?;
                let actor = Actor::user(&u, ActorKind::User, ip, user_agent);
                audit::write(tx, now, &actor, "auth.logout", &u, json!({}), Outcome::Success)?;
            }
            Ok(())
        })
    }

    /// The caller's own user record.
    pub fn me(&self, caller: &Caller) -> Result<User, UsersError> {
        let conn = self.conn();
        let row = user_row_by_id(&conn, caller.user_id)?.ok_or_else(|| UsersError::NotFound("user deleted".into()))?;
        self.user_dto(&conn, &row)
    }

    /// Changes the caller's own password (checks the current one); ends
    /// their other sessions.
    pub fn change_password(&self, caller: &Caller, actor: &Actor, current: &str, new: &str) -> Result<(), UsersError> {
        let row = must_user(&self.conn(), &caller.username)?;
        if row.source == UserSource::Ldap {
            return Err(UsersError::Forbidden("LDAP users change their password in the directory".into()));
        }
        if !password::verify(current, row.password_hash.as_deref().unwrap_or(&self.dummy_hash)) {
            return Err(UsersError::BadCredentials("invalid username or password".into()));
        }
        password::check_policy(&row.username, new, self.cfg.password_min_length, "new_password")?;
        let hash = password::hash(new)?;
        let now = self.clock.now_ms();
        let keep = match &caller.via {
            Via::Session { id_hash, .. } => id_hash.clone(),
            Via::Token { .. } => String::new(),
        };
        self.tx(|tx| {
            tx.execute(
                "UPDATE users SET password_hash = ?1, password_one_time = 0, updated_at = ?2 WHERE id = ?3",
                params![hash, now, row.id],
            )?;
            tx.execute("DELETE FROM sessions WHERE user_id = ?1 AND id_hash <> ?2", params![row.id, keep])?;
            audit::write(tx, now, actor, "user.password", &row.username, json!({"self": true}), Outcome::Success)
        })
    }

    /// Starts (or restarts) TOTP enrolment: `(secret, otpauth URI, QR data URL)`.
    pub fn totp_enroll(&self, caller: &Caller) -> Result<(String, String, String), UsersError> {
        let secret_b32 = totp::new_secret()?;
        let uri = totp::otpauth_uri(&self.cfg.totp.issuer, &caller.username, &secret_b32);
        let qr = totp::qr_data_url(&uri)?;
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let row = must_user(tx, &caller.username)?;
            if row.totp_secret.is_some() {
                return Err(UsersError::Conflict("TOTP is already enabled; disable it first".into()));
            }
            tx.execute(
                "UPDATE users SET totp_pending = ?1, updated_at = ?2 WHERE id = ?3",
                params![secret_b32, now, row.id],
            )?;
            Ok(())
        })?;
        Ok((secret_b32, uri, qr))
    }

    fn store_recovery_codes(tx: &rusqlite::Connection, user_id: i64) -> Result<Vec<String>, UsersError> {
        let codes = totp::new_recovery_codes()?;
        tx.execute("DELETE FROM recovery_codes WHERE user_id = ?1", [user_id])?;
        for c in &codes {
            tx.execute(
                "INSERT INTO recovery_codes(user_id, code_hash) VALUES (?1, ?2)",
                params![user_id, totp::recovery_hash(user_id, c)],
            )?;
        }
        Ok(codes)
    }

    /// Checks a TOTP code of an enrolled user with replay protection (the step is recorded).
    fn verify_code(
        &self,
        tx: &rusqlite::Connection,
        row: &UserRow,
        secret_b32: &str,
        code: &str,
    ) -> Result<bool, UsersError> {
        match totp::check(secret_b32, code, self.clock.now_ms())? {
            Some(step) if i64::try_from(step).unwrap_or(0) > row.totp_last_step => {
                tx.execute("UPDATE users SET totp_last_step = ?1 WHERE id = ?2", params![step as i64, row.id])?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Finishes enrolment with a code from the app; returns the recovery
    /// codes (shown once). An `enroll` session becomes a full one.
    pub fn totp_confirm(&self, caller: &Caller, actor: &Actor, code: &str) -> Result<Vec<String>, UsersError> {
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let row = must_user(tx, &caller.username)?;
            let Some(pending) = row.totp_pending.clone() else {
                return Err(UsersError::Conflict("no TOTP enrolment in progress".into()));
            };
            if !self.verify_code(tx, &row, &pending, code)? {
                audit::write(
                    tx,
                    now,
                    actor,
                    "auth.totp_failed",
                    &row.username,
                    json!({"during": "enrolment"}),
                    Outcome::Failure,
                )?;
                return Ok(Err(()));
            }
            tx.execute(
                "UPDATE users SET totp_secret = totp_pending, totp_pending = NULL, updated_at = ?1 WHERE id = ?2",
                params![now, row.id],
            )?;
            let codes = Self::store_recovery_codes(tx, row.id)?;
            if let Via::Session { id_hash, stage: Stage::Enroll, .. } = &caller.via {
                tx.execute("UPDATE sessions SET stage = 'full' WHERE id_hash = ?1", [id_hash])?;
            }
            audit::write(tx, now, actor, "user.totp_enable", &row.username, json!({}), Outcome::Success)?;
            Ok(Ok(codes))
        })?
        .map_err(|()| UsersError::BadCredentials("invalid or already used code".into()))
    }

    /// New recovery codes (the old ones stop working); needs a current code.
    pub fn regenerate_recovery_codes(
        &self,
        caller: &Caller,
        actor: &Actor,
        code: &str,
    ) -> Result<Vec<String>, UsersError> {
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let row = must_user(tx, &caller.username)?;
            let Some(secret_b32) = row.totp_secret.clone() else {
                return Err(UsersError::Conflict("TOTP is not enabled".into()));
            };
            if !self.verify_code(tx, &row, &secret_b32, code)? {
                return Ok(Err(()));
            }
            let codes = Self::store_recovery_codes(tx, row.id)?;
            audit::write(tx, now, actor, "user.recovery_codes", &row.username, json!({}), Outcome::Success)?;
            Ok(Ok(codes))
        })?
        .map_err(|()| UsersError::BadCredentials("invalid or already used code".into()))
    }

    /// Turns the caller's TOTP off (not when it is required); needs a current code.
    pub fn totp_disable(&self, caller: &Caller, actor: &Actor, code: &str) -> Result<(), UsersError> {
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let row = must_user(tx, &caller.username)?;
            let Some(secret_b32) = row.totp_secret.clone() else {
                return Err(UsersError::Conflict("TOTP is not enabled".into()));
            };
            if self.totp_required(tx, &row)? {
                return Err(UsersError::Forbidden("TOTP is required for this user".into()));
            }
            if !self.verify_code(tx, &row, &secret_b32, code)? {
                return Ok(Err(()));
            }
            tx.execute(
                "UPDATE users SET totp_secret = NULL, totp_last_step = 0, updated_at = ?1 WHERE id = ?2",
                params![now, row.id],
            )?;
            tx.execute("DELETE FROM recovery_codes WHERE user_id = ?1", [row.id])?;
            audit::write(tx, now, actor, "user.totp_disable", &row.username, json!({}), Outcome::Success)?;
            Ok(Ok(()))
        })?
        .map_err(|()| UsersError::BadCredentials("invalid or already used code".into()))
    }
}
