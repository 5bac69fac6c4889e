//! LDAP login against a real OpenLDAP slapd started by `scripts/ldap.sh`
//! (own config and data in a temporary directory, free ports, stopped at the
//! end): direct bind and search bind, plain, StartTLS and LDAPS with the
//! script's CA (and refusal with a CA that did not sign the server), wrong
//! passwords, unknown users, `memberOf` and group-search mapping to sluice
//! groups and types, and the audit records of the LDAP sync.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use sluice_users::config::LdapSettings;
use sluice_users::{AuthConfig, LoginAttempt, LoginError, ManualClock, Stage, UserType, Users};

struct Slapd {
    dir: tempfile::TempDir,
    port: u16,
    tls_port: u16,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Slapd {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (port, tls_port) = (free_port(), free_port());
        let out = Command::new("bash")
            .arg(repo_root().join("scripts/ldap.sh"))
            .arg("start")
            .arg(dir.path())
            .env("LDAP_PORT", port.to_string())
            .env("LDAPS_PORT", tls_port.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/ldap.sh start failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Self { dir, port, tls_port }
    }

    fn ca(&self, name: &str) -> String {
        self.dir.path().join("ldap/tls").join(name).display().to_string()
    }

    fn settings(&self, extra: serde_json::Value) -> LdapSettings {
        let mut v = json!({
            "url": format!("ldap://127.0.0.1:{}", self.port),
            "bind_dn": "uid={username},ou=people,dc=example,dc=org",
            "group_map": [
                {"ldap": "cn=admins,ou=groups,dc=example,dc=org", "groups": ["ops"], "type": "admin"},
                {"ldap": "developers", "groups": ["dev"], "type": "operator"}
            ],
            "timeout": "5s"
        });
        for (k, val) in extra.as_object().unwrap() {
            if val.is_null() {
                v.as_object_mut().unwrap().remove(k);
            } else {
                v[k] = val.clone();
            }
        }
        serde_json::from_value(v).unwrap()
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(repo_root().join("scripts/ldap.sh")).arg("stop").arg(self.dir.path()).output();
    }
}

fn users(ldap: LdapSettings) -> Users {
    let cfg = AuthConfig { ldap: Some(ldap), ..AuthConfig::default() };
    Users::open_in_memory(&cfg, Arc::new(ManualClock::new(1_767_225_600_000))).unwrap()
}

fn login(u: &Users, name: &str, pw: &str) -> Result<Stage, LoginError> {
    u.login(&LoginAttempt { username: name.into(), password: pw.into(), ip: None, user_agent: None }).map(|o| o.stage)
}

#[test]
fn ldap_logins_against_real_slapd() {
    let slapd = Slapd::start();

    // Direct bind over plain LDAP, groups from memberOf.
    let u = users(slapd.settings(json!({})));
    assert_eq!(login(&u, "alice", "alice-pass"), Ok(Stage::Full));
    let alice = u.get_user("alice").unwrap();
    assert_eq!(alice.user_type, UserType::Admin);
    assert_eq!(alice.groups, ["dev", "ops"]);
    assert_eq!(alice.display_name, "Alice Admin");
    assert_eq!(login(&u, "bob", "bob-pass"), Ok(Stage::Full));
    let bob = u.get_user("bob").unwrap();
    assert_eq!((bob.user_type, bob.groups.clone()), (UserType::Operator, vec!["dev".to_string()]));
    assert_eq!(login(&u, "carol", "carol-pass"), Ok(Stage::Full));
    let carol = u.get_user("carol").unwrap();
    assert_eq!((carol.user_type, carol.groups.len()), (UserType::Viewer, 0));
    // Wrong password, unknown user, empty password, filter/DN injection: one answer.
    assert_eq!(login(&u, "bob", "wrong"), Err(LoginError::InvalidCredentials));
    assert_eq!(login(&u, "nobody", "bob-pass"), Err(LoginError::InvalidCredentials));
    assert_eq!(login(&u, "bob", ""), Err(LoginError::InvalidCredentials));
    assert_eq!(login(&u, "bob,ou=people,dc=example,dc=org", "bob-pass"), Err(LoginError::InvalidCredentials));
    assert!(u.get_user("nobody").is_err(), "no user is created for a failed bind");
    // The sluice groups were created and the mapping is audited.
    let groups: Vec<String> = u.list_groups().unwrap().into_iter().map(|g| g.name).collect();
    assert_eq!(groups, ["dev", "ops"]);
    assert_eq!(u.get_group("dev").unwrap().ldap_members, ["alice", "bob"]);
    let (records, _) = u
        .audit_query(&sluice_users::AuditQuery { action: Some("group.ldap_sync".into()), ..Default::default() })
        .unwrap();
    assert_eq!(records.len(), 2);
    // A second login changes nothing: no new sync record.
    assert_eq!(login(&u, "bob", "bob-pass"), Ok(Stage::Full));
    let (records, _) = u
        .audit_query(&sluice_users::AuditQuery { action: Some("group.ldap_sync".into()), ..Default::default() })
        .unwrap();
    assert_eq!(records.len(), 2);

    // Search bind (as the admin account) + group search by member DN, over StartTLS.
    let s = slapd.settings(json!({
        "bind_dn": null,
        "search_base": "ou=people,dc=example,dc=org",
        "search_filter": "(uid={username})",
        "search_bind_dn": "cn=admin,dc=example,dc=org",
        "search_bind_password": "admin-pass",
        "group_search_base": "ou=groups,dc=example,dc=org",
        "group_search_filter": "(member={dn})",
        "tls": "starttls",
        "ca_file": slapd.ca("ca.pem"),
    }));
    let u = users(s.clone());
    assert_eq!(login(&u, "alice", "alice-pass"), Ok(Stage::Full));
    assert_eq!(u.get_user("alice").unwrap().groups, ["dev", "ops"]);
    assert_eq!(login(&u, "bob", "alice-pass"), Err(LoginError::InvalidCredentials));
    assert_eq!(login(&u, "*", "alice-pass"), Err(LoginError::InvalidCredentials));
    let t = u.ldap_test(None, "bob", "bob-pass").unwrap().unwrap();
    assert_eq!(t.0.dn, "uid=bob,ou=people,dc=example,dc=org");
    assert_eq!(t.1.groups, ["dev"]);

    // LDAPS with the right CA; StartTLS with a CA that did not sign the server fails.
    let ldaps =
        slapd.settings(json!({"url": format!("ldaps://127.0.0.1:{}", slapd.tls_port), "ca_file": slapd.ca("ca.pem")}));
    let u = users(ldaps);
    assert_eq!(login(&u, "carol", "carol-pass"), Ok(Stage::Full));
    let wrong_ca = slapd.settings(json!({"tls": "starttls", "ca_file": slapd.ca("other-ca.pem")}));
    let u = users(wrong_ca.clone());
    assert_eq!(login(&u, "carol", "carol-pass"), Err(LoginError::InvalidCredentials));
    let e = u.ldap_test(None, "carol", "carol-pass").unwrap().unwrap_err();
    assert!(e.contains("connect") || e.contains("certificate") || e.contains("tls"), "{e}");
    let (records, _) = u
        .audit_query(&sluice_users::AuditQuery { action: Some("auth.login_failed".into()), ..Default::default() })
        .unwrap();
    assert_eq!(records[0].detail["reason"], "ldap_unavailable");
    // A local user of the same name is never taken over by LDAP.
    let u = users(slapd.settings(json!({})));
    u.create_user(
        &sluice_users::Actor::cli(),
        sluice_users::accounts::NewUser {
            username: "bob".into(),
            display_name: None,
            user_type: UserType::Viewer,
            password: Some("local-bob-password".into()),
            groups: vec![],
        },
    )
    .unwrap();
    assert_eq!(login(&u, "bob", "bob-pass"), Err(LoginError::InvalidCredentials));
    assert_eq!(login(&u, "bob", "local-bob-password"), Ok(Stage::Full));
}
