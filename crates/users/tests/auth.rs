//! Every authentication path of the users service, with a manual clock
//! (no sleeps): passwords, unknown users, lockout and its end, the per
//! address rate limit, TOTP enrolment / accept / reject / replay, recovery
//! codes, session idle and absolute timeouts, API token expiry, and the
//! audit records of every change.

use std::sync::Arc;
use std::time::Duration;

use sluice_core::config::HumanDuration;
use sluice_query::SourcePattern;
use sluice_users::accounts::{NewGroup, NewUser, UserPatch};
use sluice_users::config::{LockoutConfig, LoginRateConfig, SessionConfig, TotpConfig};
use sluice_users::totp;
use sluice_users::{
    Actor, AuditQuery, AuthConfig, AuthFailure, Clock as _, Factor, LoginAttempt, LoginError, ManualClock, Stage,
    Subject, SubjectKind, TokenScope, UserType, Users, UsersError, Via,
};

/// 2026-01-01T00:00:00Z, at a step boundary.
const T0: i64 = 1_767_225_600_000;

fn cfg() -> AuthConfig {
    AuthConfig {
        session: SessionConfig {
            idle_timeout: HumanDuration(Duration::from_secs(30 * 60)),
            absolute_timeout: HumanDuration(Duration::from_secs(2 * 3600)),
        },
        lockout: LockoutConfig {
            threshold: 5,
            window: HumanDuration(Duration::from_secs(600)),
            duration: HumanDuration(Duration::from_secs(900)),
        },
        login_rate: LoginRateConfig { per_minute: 600, burst: 100 },
        ..AuthConfig::default()
    }
}

fn service(cfg: AuthConfig) -> (Users, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(T0));
    (Users::open_in_memory(&cfg, clock.clone()).unwrap(), clock)
}

fn add(u: &Users, name: &str, t: UserType, pw: &str) {
    u.create_user(
        &Actor::cli(),
        NewUser { username: name.into(), display_name: None, user_type: t, password: Some(pw.into()), groups: vec![] },
    )
    .unwrap();
}

fn attempt(name: &str, pw: &str) -> LoginAttempt {
    LoginAttempt {
        username: name.into(),
        password: pw.into(),
        ip: Some("10.0.0.1".into()),
        user_agent: Some("test".into()),
    }
}

fn actions(u: &Users) -> Vec<String> {
    let (records, _) = u.audit_query(&AuditQuery { size: Some(1000), ..Default::default() }).unwrap();
    records.into_iter().rev().map(|r| format!("{} {} {} {}", r.action, r.actor, r.target, r.outcome)).collect()
}

#[test]
fn password_login_good_bad_unknown_and_disabled() {
    let (u, _clock) = service(cfg());
    add(&u, "alice", UserType::Viewer, "alice-password-1");
    let ok = u.login(&attempt("Alice ", "alice-password-1")).unwrap();
    assert_eq!(ok.stage, Stage::Full);
    assert_eq!(ok.username, "alice");
    assert_eq!(ok.session_id.len(), 64);
    assert_eq!(ok.csrf_token, sluice_users::login::csrf_token(&ok.session_id));
    let caller = u.session(&ok.session_id).unwrap();
    assert_eq!(caller.username, "alice");
    assert_eq!(caller.allowed, vec![], "no assignments: sees nothing");
    // Wrong password and unknown user: the same error.
    assert_eq!(u.login(&attempt("alice", "alice-password-2")), Err(LoginError::InvalidCredentials));
    assert_eq!(u.login(&attempt("mallory", "alice-password-1")), Err(LoginError::InvalidCredentials));
    assert_eq!(u.login(&attempt("alice", "")), Err(LoginError::InvalidCredentials));
    // Disabled: same answer with the right password, and the session is gone.
    u.update_user(&Actor::cli(), "alice", UserPatch { disabled: Some(true), ..Default::default() }).unwrap();
    assert_eq!(u.login(&attempt("alice", "alice-password-1")), Err(LoginError::InvalidCredentials));
    assert_eq!(u.session(&ok.session_id), Err(AuthFailure::Unknown));
    assert_eq!(
        actions(&u),
        [
            "user.create cli:root alice success",
            "auth.login alice alice success",
            "auth.login_failed alice alice failure",
            "auth.login_failed mallory mallory failure",
            "auth.login_failed alice alice failure",
            "user.update cli:root alice success",
            "auth.login_failed alice alice failure",
        ]
        .map(|s| s.replace("cli:root", &Actor::cli().name))
    );
}

#[test]
fn unknown_user_costs_a_password_check() {
    // No enumeration by timing: an unknown name runs argon2 on the dummy hash.
    // Asserted as a lower bound only, which a busy machine cannot break (it
    // only makes things slower): the fastest of 3 argon2 verifications
    // measured here is the floor, and a login for an unknown name costs at
    // least half of it (one that skipped argon2 costs microseconds).
    let (u, _clock) = service(cfg());
    add(&u, "alice", UserType::Viewer, "alice-password-1");
    let hash = sluice_users::password::hash("some-password-1").unwrap();
    let floor = (0..3)
        .map(|_| {
            let t = std::time::Instant::now();
            assert!(!sluice_users::password::verify("wrong-password-x", &hash));
            t.elapsed()
        })
        .min()
        .unwrap();
    let time = |name: &str| {
        let t = std::time::Instant::now();
        let r = u.login(&attempt(name, "wrong-password-x"));
        assert_eq!(r, Err(LoginError::InvalidCredentials));
        t.elapsed()
    };
    let (known, unknown) = (time("alice"), time("nobody"));
    assert!(unknown * 2 >= floor, "unknown {unknown:?} vs one argon2 verification {floor:?} (known {known:?})");
    assert!(known * 2 >= floor, "known {known:?} vs one argon2 verification {floor:?}");
}

#[test]
fn lockout_after_threshold_then_unlock_after_duration() {
    let (u, clock) = service(AuthConfig { lockout: LockoutConfig { threshold: 3, ..cfg().lockout }, ..cfg() });
    add(&u, "bob", UserType::Viewer, "bob-password-123");
    for _ in 0..3 {
        assert_eq!(u.login(&attempt("bob", "nope-nope-nope")), Err(LoginError::InvalidCredentials));
    }
    // Locked: even the right password is refused, and so is an unknown name
    // after the same number of failures (no enumeration through lockout).
    assert_eq!(u.login(&attempt("bob", "bob-password-123")), Err(LoginError::Locked { retry_after: 900 }));
    for _ in 0..3 {
        let _ = u.login(&attempt("ghost", "nope-nope-nope"));
    }
    assert_eq!(u.login(&attempt("ghost", "nope-nope-nope")), Err(LoginError::Locked { retry_after: 900 }));
    assert!(u.get_user("bob").unwrap().locked_until.is_some());
    clock.advance(Duration::from_secs(899));
    assert_eq!(u.login(&attempt("bob", "bob-password-123")), Err(LoginError::Locked { retry_after: 1 }));
    clock.advance(Duration::from_secs(1));
    assert_eq!(u.login(&attempt("bob", "bob-password-123")).unwrap().stage, Stage::Full);
    // An admin unlock clears it at once.
    for _ in 0..3 {
        let _ = u.login(&attempt("bob", "nope-nope-nope"));
    }
    assert!(matches!(u.login(&attempt("bob", "bob-password-123")), Err(LoginError::Locked { .. })));
    u.unlock(&Actor::cli(), "bob").unwrap();
    assert_eq!(u.login(&attempt("bob", "bob-password-123")).unwrap().stage, Stage::Full);
    let a = actions(&u);
    assert_eq!(a.iter().filter(|s| s.starts_with("auth.locked ")).count(), 3, "{a:?}");
    assert!(a.iter().any(|s| s.starts_with("user.unlock ")), "{a:?}");
}

fn attempt_from(name: &str, pw: &str, ip: &str) -> LoginAttempt {
    LoginAttempt { ip: Some(ip.into()), ..attempt(name, pw) }
}

/// Issue #18: five failed logins from anywhere locked any account, the
/// administrator's included, for 15 minutes from every address. A lock now
/// holds one name for one address: the admin still gets in from loopback,
/// and `sluice user unlock` in another process (same database) ends a lock
/// on the running node.
#[test]
fn issue_18_lockout_is_per_user_and_address_and_the_cli_unlocks() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let node = Users::open_with_clock(&cfg(), dir.path(), clock.clone()).unwrap();
    add(&node, "admin", UserType::Admin, "admin-password-1");
    for _ in 0..5 {
        let r = node.login(&attempt_from("admin", "guess-guess-guess", "203.0.113.9"));
        assert_eq!(r, Err(LoginError::InvalidCredentials));
    }
    let r = node.login(&attempt_from("admin", "admin-password-1", "203.0.113.9"));
    assert_eq!(r, Err(LoginError::Locked { retry_after: 900 }));
    // Loopback and any other address: not locked by the remote failures.
    assert_eq!(node.login(&attempt_from("admin", "admin-password-1", "127.0.0.1")).unwrap().stage, Stage::Full);
    assert_eq!(node.login(&attempt_from("admin", "admin-password-1", "10.1.2.3")).unwrap().stage, Stage::Full);
    // A success elsewhere does not lift the attacker's lock.
    let r = node.login(&attempt_from("admin", "admin-password-1", "203.0.113.9"));
    assert_eq!(r, Err(LoginError::Locked { retry_after: 900 }));
    // `sluice user unlock admin`: another process on the same database.
    clock.advance(Duration::from_secs(60));
    let cli = Users::open_with_clock(&cfg(), dir.path(), clock.clone()).unwrap();
    cli.unlock(&Actor::cli(), "admin").unwrap();
    drop(cli);
    assert_eq!(node.login(&attempt_from("admin", "admin-password-1", "203.0.113.9")).unwrap().stage, Stage::Full);
    // An unlock before a lock does not lift a later one.
    clock.advance(Duration::from_secs(1));
    for _ in 0..5 {
        let _ = node.login(&attempt_from("admin", "guess-guess-guess", "203.0.113.9"));
    }
    let r = node.login(&attempt_from("admin", "admin-password-1", "203.0.113.9"));
    assert_eq!(r, Err(LoginError::Locked { retry_after: 900 }));
}

#[test]
fn rate_limit_per_address() {
    let (u, clock) = service(AuthConfig { login_rate: LoginRateConfig { per_minute: 6, burst: 2 }, ..cfg() });
    add(&u, "carol", UserType::Viewer, "carol-password-1");
    assert!(u.login(&attempt("carol", "carol-password-1")).is_ok());
    assert!(u.login(&attempt("carol", "carol-password-1")).is_ok());
    assert_eq!(u.login(&attempt("carol", "carol-password-1")), Err(LoginError::RateLimited { retry_after: 10 }));
    let mut other = attempt("carol", "carol-password-1");
    other.ip = Some("10.0.0.2".into());
    assert!(u.login(&other).is_ok(), "another address has its own bucket");
    clock.advance(Duration::from_secs(10));
    assert!(u.login(&attempt("carol", "carol-password-1")).is_ok());
}

#[test]
fn totp_enrol_accept_reject_replay_and_recovery_codes() {
    let (u, clock) = service(cfg());
    add(&u, "dave", UserType::Operator, "dave-password-1");
    let s = u.login(&attempt("dave", "dave-password-1")).unwrap();
    let caller = u.session(&s.session_id).unwrap();
    let actor = caller.actor(None, None);
    let (secret, uri, qr) = u.totp_enroll(&caller).unwrap();
    assert!(uri.starts_with("otpauth://totp/sluice:dave?secret=") && uri.contains(&secret));
    assert!(qr.starts_with("data:image/svg+xml;base64,"));
    // A code valid in none of the steps this test uses.
    let valid: Vec<String> = (-2..20).map(|i| totp::generate(&secret, T0 + i * 30_000).unwrap()).collect();
    let bad = ["000000", "111111", "222222", "333333"].into_iter().find(|c| !valid.iter().any(|v| v == c)).unwrap();
    assert!(matches!(u.totp_confirm(&caller, &actor, bad), Err(UsersError::BadCredentials(_))));
    let codes = u.totp_confirm(&caller, &actor, &totp::generate(&secret, clock.now_ms()).unwrap()).unwrap();
    assert_eq!(codes.len(), 10);
    assert!(u.get_user("dave").unwrap().totp.enabled);
    assert!(matches!(u.totp_enroll(&caller), Err(UsersError::Conflict(_))));

    // Next login: password, then TOTP.
    clock.advance(Duration::from_secs(30));
    let pending = u.login(&attempt("dave", "dave-password-1")).unwrap();
    assert_eq!(pending.stage, Stage::Totp);
    assert_eq!(pending.expires_in, 300);
    assert_eq!(u.session(&pending.session_id), Err(AuthFailure::Pending), "a pending login authenticates nothing");
    assert_eq!(
        u.second_factor(&pending.session_id, &Factor::Code(bad.into()), None, None),
        Err(LoginError::InvalidCode)
    );
    let code = totp::generate(&secret, clock.now_ms()).unwrap();
    let full = u.second_factor(&pending.session_id, &Factor::Code(code.clone()), None, None).unwrap();
    assert_eq!(full.stage, Stage::Full);
    assert_ne!(full.session_id, pending.session_id, "a new session id after the second factor");
    assert!(u.session(&full.session_id).is_ok());
    assert_eq!(u.session(&pending.session_id), Err(AuthFailure::Unknown));
    // Replay of the same code in a new login: rejected, even within its step.
    let again = u.login(&attempt("dave", "dave-password-1")).unwrap();
    assert_eq!(u.second_factor(&again.session_id, &Factor::Code(code), None, None), Err(LoginError::InvalidCode));
    // An older code still inside the skew window is a replay too.
    let previous = totp::generate(&secret, clock.now_ms() - 30_000).unwrap();
    assert_eq!(u.second_factor(&again.session_id, &Factor::Code(previous), None, None), Err(LoginError::InvalidCode));
    // Recovery code: works once.
    let r = Factor::Recovery(codes[3].to_uppercase());
    assert_eq!(u.second_factor(&again.session_id, &r, None, None).unwrap().stage, Stage::Full);
    let third = u.login(&attempt("dave", "dave-password-1")).unwrap();
    assert_eq!(u.second_factor(&third.session_id, &r, None, None), Err(LoginError::InvalidCode));
    assert_eq!(u.get_user("dave").unwrap().totp.recovery_codes_left, 9);
    // The pending login expires after five minutes.
    clock.advance(Duration::from_secs(301));
    let next = totp::generate(&secret, clock.now_ms()).unwrap();
    assert_eq!(u.second_factor(&third.session_id, &Factor::Code(next), None, None), Err(LoginError::NoPendingLogin));
    let a = actions(&u);
    for want in ["user.totp_enable", "auth.totp_failed", "auth.recovery_code_used"] {
        assert!(a.iter().any(|s| s.starts_with(want)), "{want} missing in {a:?}");
    }
}

#[test]
fn totp_required_by_type_or_group_forces_enrolment() {
    let (u, clock) = service(AuthConfig {
        totp: TotpConfig { require_types: vec![UserType::Admin], ..Default::default() },
        ..cfg()
    });
    add(&u, "root", UserType::Admin, "root-password-1");
    add(&u, "erin", UserType::Viewer, "erin-password-1");
    assert_eq!(u.login(&attempt("erin", "erin-password-1")).unwrap().stage, Stage::Full);
    u.create_group(&Actor::cli(), NewGroup { name: "secure".into(), description: String::new(), require_totp: true })
        .unwrap();
    u.add_member(&Actor::cli(), "secure", "erin").unwrap();
    let s = u.login(&attempt("erin", "erin-password-1")).unwrap();
    assert_eq!(s.stage, Stage::Enroll);
    let caller = u.session(&s.session_id).unwrap();
    assert!(matches!(caller.via, Via::Session { stage: Stage::Enroll, .. }));
    let (secret, _, _) = u.totp_enroll(&caller).unwrap();
    u.totp_confirm(&caller, &caller.actor(None, None), &totp::generate(&secret, clock.now_ms()).unwrap()).unwrap();
    assert!(matches!(u.session(&s.session_id).unwrap().via, Via::Session { stage: Stage::Full, .. }));
    // Required: cannot be turned off by the user.
    clock.advance(Duration::from_secs(30));
    let c = u.session(&s.session_id).unwrap();
    let code = totp::generate(&secret, clock.now_ms()).unwrap();
    assert!(matches!(u.totp_disable(&c, &c.actor(None, None), &code), Err(UsersError::Forbidden(_))));
    assert_eq!(u.login(&attempt("root", "root-password-1")).unwrap().stage, Stage::Enroll);
    assert!(u.get_user("root").unwrap().totp.required);
}

#[test]
fn session_idle_and_absolute_timeouts() {
    let (u, clock) = service(cfg());
    add(&u, "frank", UserType::Viewer, "frank-password-1");
    let s = u.login(&attempt("frank", "frank-password-1")).unwrap();
    // Active every 29 minutes: stays alive until the absolute timeout (2 h).
    for _ in 0..4 {
        clock.advance(Duration::from_secs(29 * 60));
        assert!(u.session(&s.session_id).is_ok());
    }
    clock.advance(Duration::from_secs(4 * 60 + 1));
    assert_eq!(u.session(&s.session_id), Err(AuthFailure::Expired), "absolute timeout");
    assert_eq!(u.session(&s.session_id), Err(AuthFailure::Unknown), "and it is deleted");
    let s = u.login(&attempt("frank", "frank-password-1")).unwrap();
    clock.advance(Duration::from_secs(30 * 60));
    assert_eq!(u.session(&s.session_id), Err(AuthFailure::Expired), "idle timeout");
    let s = u.login(&attempt("frank", "frank-password-1")).unwrap();
    u.logout(&s.session_id, None, None).unwrap();
    assert_eq!(u.session(&s.session_id), Err(AuthFailure::Unknown));
    assert!(actions(&u).iter().any(|a| a.starts_with("auth.logout frank")));
}

#[test]
fn api_tokens_scope_expiry_and_revocation() {
    let (u, clock) = service(cfg());
    add(&u, "admin", UserType::Admin, "admin-password-1");
    add(&u, "gina", UserType::Viewer, "gina-password-1");
    u.assign(
        &Actor::cli(),
        &Subject { kind: SubjectKind::User, name: "gina".into() },
        SourcePattern::new("acme", "*", "*"),
    )
    .unwrap();
    let cli = Actor::cli();
    assert!(matches!(u.create_token(&cli, "gina", "x", TokenScope::Admin, None), Err(UsersError::Forbidden(_))));
    let (t, secret) =
        u.create_token(&cli, "gina", "grafana", TokenScope::Search, Some(Duration::from_secs(3600))).unwrap();
    assert!(secret.starts_with("slt_") && secret.len() == 4 + 16 + 1 + 64);
    let c = u.token(&secret).unwrap();
    assert_eq!(c.username, "gina");
    assert_eq!(c.via, Via::Token { id: t.id, scope: TokenScope::Search });
    assert_eq!(c.principal().allowed, vec![SourcePattern::new("acme", "*", "*")]);
    let mut wrong = secret.clone();
    wrong.pop();
    wrong.push('x');
    assert_eq!(u.token(&wrong), Err(AuthFailure::Unknown));
    assert_eq!(u.token("slt_0000000000000000_00"), Err(AuthFailure::Unknown));
    assert_eq!(u.token("not-a-user-token"), Err(AuthFailure::Unknown));
    clock.advance(Duration::from_secs(3600));
    assert_eq!(u.token(&secret), Err(AuthFailure::Expired));
    let (t2, s2) = u.create_token(&cli, "admin", "ops", TokenScope::Admin, None).unwrap();
    assert_eq!(u.token(&s2).unwrap().via, Via::Token { id: t2.id, scope: TokenScope::Admin });
    // Only the owner's own tokens when `owner` is given.
    assert!(matches!(u.revoke_token(&cli, t2.id, Some("gina")), Err(UsersError::NotFound(_))));
    u.revoke_token(&cli, t2.id, None).unwrap();
    assert_eq!(u.token(&s2), Err(AuthFailure::Unknown));
    let a = actions(&u);
    assert_eq!(a.iter().filter(|s| s.starts_with("token.create ")).count(), 2);
    assert_eq!(a.iter().filter(|s| s.starts_with("token.revoke ")).count(), 1);
}

#[test]
fn assignments_make_the_principal_and_every_change_is_audited() {
    let (u, _clock) = service(cfg());
    let cli = Actor::cli();
    assert_eq!(u.bootstrap_admin(Some("first-admin-password".into())).unwrap().unwrap().generated_password, None);
    assert_eq!(u.bootstrap_admin(None).unwrap(), None, "only on an empty database");
    assert_eq!(u.principal_of("admin").unwrap().allowed, vec![SourcePattern::all()]);
    add(&u, "hank", UserType::Viewer, "hank-password-1");
    u.create_group(&cli, NewGroup { name: "acme".into(), description: "ACME".into(), require_totp: false }).unwrap();
    u.add_member(&cli, "acme", "hank").unwrap();
    let g = Subject { kind: SubjectKind::Group, name: "acme".into() };
    let h = Subject { kind: SubjectKind::User, name: "hank".into() };
    let a1 = u.assign(&cli, &g, SourcePattern::new("acme", "*", "*")).unwrap();
    u.assign(&cli, &h, SourcePattern::new("shared", "web", "h-*")).unwrap();
    assert!(matches!(u.assign(&cli, &g, SourcePattern::new("acme", "*", "*")), Err(UsersError::Conflict(_))));
    assert!(matches!(u.assign(&cli, &g, SourcePattern::new("", "*", "*")), Err(UsersError::Invalid { .. })));
    assert_eq!(
        u.principal_of("hank").unwrap().allowed,
        vec![SourcePattern::new("acme", "*", "*"), SourcePattern::new("shared", "web", "h-*")]
    );
    u.remove_member(&cli, "acme", "hank").unwrap();
    assert_eq!(u.principal_of("hank").unwrap().allowed, vec![SourcePattern::new("shared", "web", "h-*")]);
    u.unassign(&cli, a1.id).unwrap();
    u.update_user(&cli, "hank", UserPatch { user_type: Some(UserType::Operator), ..Default::default() }).unwrap();
    u.set_password(&cli, "hank", "hank-password-2").unwrap();
    u.delete_group(&cli, "acme").unwrap();
    // Integrity: the last enabled admin stays.
    assert!(matches!(
        u.update_user(&cli, "admin", UserPatch { disabled: Some(true), ..Default::default() }),
        Err(UsersError::Conflict(_))
    ));
    assert!(matches!(u.delete_user(&cli, "admin"), Err(UsersError::Conflict(_))));
    u.delete_user(&cli, "hank").unwrap();
    let who = cli.name.clone();
    assert_eq!(
        actions(&u),
        [
            "user.create system admin success".to_string(),
            "assignment.create system user:admin success".into(),
            format!("user.create {who} hank success"),
            format!("group.create {who} group:acme success"),
            format!("group.member_add {who} group:acme success"),
            format!("assignment.create {who} group:acme success"),
            format!("assignment.create {who} user:hank success"),
            format!("group.member_remove {who} group:acme success"),
            format!("assignment.delete {who} group:acme success"),
            format!("user.update {who} hank success"),
            format!("user.password {who} hank success"),
            format!("group.delete {who} group:acme success"),
            format!("user.delete {who} hank success"),
        ]
    );
    // Filters: action prefix, target, text, paging.
    let q = |q: AuditQuery| u.audit_query(&q).unwrap();
    assert_eq!(q(AuditQuery { action: Some("assignment.".into()), ..Default::default() }).0.len(), 4);
    assert_eq!(q(AuditQuery { target: Some("hank".into()), ..Default::default() }).0.len(), 4);
    assert_eq!(q(AuditQuery { q: Some("h-*".into()), ..Default::default() }).0.len(), 1);
    let (page, next) = q(AuditQuery { size: Some(5), ..Default::default() });
    assert_eq!(page.len(), 5);
    let (rest, end) = q(AuditQuery { size: Some(100), before: next.map(|n| n.parse().unwrap()), ..Default::default() });
    assert_eq!((rest.len(), end), (8, None));
    assert_eq!(page[0].action, "user.delete");
}

/// Issue #22: the first administrator's printed password is one-time until
/// replaced; a chosen one is not.
#[test]
fn the_generated_first_admin_password_is_one_time_until_replaced() {
    let (u, _clock) = service(cfg());
    let generated = u.bootstrap_admin(None).unwrap().unwrap().generated_password.unwrap();
    assert!(u.get_user("admin").unwrap().password_one_time, "the printed password is one-time");
    u.set_password(&Actor::cli(), "admin", "a-new-admin-password").unwrap();
    assert!(!u.get_user("admin").unwrap().password_one_time, "replaced");
    assert_ne!(generated, "a-new-admin-password");

    let (u, _clock) = service(cfg());
    u.bootstrap_admin(Some("first-admin-password".into())).unwrap();
    assert!(!u.get_user("admin").unwrap().password_one_time, "a password the operator chose is not one-time");
}
