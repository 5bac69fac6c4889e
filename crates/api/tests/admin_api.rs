//! The admin endpoints over the router with a real (in-memory) users
//! service: create, read, change and delete users and groups, the audit
//! records they leave, and the type check that comes before the body (a user
//! who is not an admin gets `403`, whatever they send).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use serde_json::{json, Value};
use sluice_api::{router, ApiState, StaticTokens};
use sluice_core::metrics::Registry;
use sluice_users::{Actor, AuthConfig, ManualClock, TokenScope, Users};
use tower::ServiceExt as _;

const ADMIN_PASSWORD: &str = "admin-password-0123";
const ANN_PASSWORD: &str = "ann-password-0123456";

struct Reply {
    status: StatusCode,
    cookies: Vec<String>,
    json: Value,
}

/// One request; `auth` is a header (name, value) pair or none.
async fn call(app: Router, method: &str, uri: &str, auth: &[(&str, &str)], body: &str) -> Reply {
    let mut req = Request::builder().method(method).uri(uri);
    for (k, v) in auth {
        req = req.header(*k, *v);
    }
    if !body.is_empty() {
        req = req.header(header::CONTENT_TYPE, "application/json");
    }
    let resp = app.oneshot(req.body(Body::from(body.to_string())).unwrap()).await.unwrap();
    let status = resp.status();
    let cookies = resp
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string())
        .collect();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
    let json = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() };
    Reply { status, cookies, json }
}

fn setup() -> (ApiState, String) {
    let users =
        Arc::new(Users::open_in_memory(&AuthConfig::default(), Arc::new(ManualClock::new(1_767_225_600_000))).unwrap());
    users.bootstrap_admin(Some(ADMIN_PASSWORD.into())).unwrap();
    let (_, secret) = users.create_token(&Actor::system(), "admin", "tests", TokenScope::Admin, None).unwrap();
    let st = ApiState::new(Arc::new(Registry::default()), "n1").with_users(users, Arc::new(StaticTokens::none()));
    (st, format!("Bearer {secret}"))
}

#[tokio::test]
async fn admins_manage_users_and_groups_and_others_get_403_before_their_body_is_read() {
    let (st, admin) = setup();
    let a = [("authorization", admin.as_str())];
    let app = || router(st.clone());

    let body = json!({"username": "ann", "type": "viewer", "password": ANN_PASSWORD}).to_string();
    let r = call(app(), "POST", "/api/v1/users", &a, &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    assert_eq!((r.json["username"].as_str(), r.json["type"].as_str()), (Some("ann"), Some("viewer")));
    let r = call(app(), "POST", "/api/v1/users", &a, r#"{"username":"bob","type":"viewer","colour":"red"}"#).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.json["error"]["message"].as_str().unwrap().contains("unknown field `colour`"), "{}", r.json);

    let r = call(app(), "PATCH", "/api/v1/users/ann", &a, r#"{"display_name":"Ann"}"#).await;
    assert_eq!((r.status, r.json["display_name"].as_str()), (StatusCode::OK, Some("Ann")));
    let r = call(app(), "GET", "/api/v1/users/ann", &a, "").await;
    assert_eq!((r.status, r.json["display_name"].as_str()), (StatusCode::OK, Some("Ann")));
    let r = call(app(), "GET", "/api/v1/users", &a, "").await;
    let names: Vec<&str> =
        r.json["users"].as_array().unwrap().iter().map(|u| u["username"].as_str().unwrap()).collect();
    assert_eq!(names, ["admin", "ann"]);

    let r = call(app(), "POST", "/api/v1/groups", &a, r#"{"name":"ops"}"#).await;
    assert_eq!((r.status, r.json["name"].as_str()), (StatusCode::CREATED, Some("ops")));
    let r = call(app(), "PUT", "/api/v1/groups/ops/members/ann", &a, "").await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = call(app(), "GET", "/api/v1/groups/ops", &a, "").await;
    assert_eq!(r.json["members"], json!(["ann"]));
    let r = call(app(), "DELETE", "/api/v1/groups/ops/members/ann", &a, "").await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = call(app(), "GET", "/api/v1/groups/ops", &a, "").await;
    assert_eq!(r.json["members"], json!([]));

    // Ann (a viewer, by session) is refused by type first: a broken body
    // does not turn the 403 into a 400.
    let login = json!({"username": "ann", "password": ANN_PASSWORD}).to_string();
    let r = call(app(), "POST", "/api/v1/auth/login", &[], &login).await;
    assert_eq!((r.status, r.json["status"].as_str()), (StatusCode::OK, Some("authenticated")), "{}", r.json);
    let csrf = r.json["csrf_token"].as_str().unwrap().to_string();
    let cookie = r.cookies.join("; ");
    let ann = [("cookie", cookie.as_str()), ("x-csrf-token", csrf.as_str())];
    let forbidden = json!({"error": {"type": "forbidden", "message": "this needs a user of type admin or above"}});
    for (method, path, body) in [
        ("POST", "/api/v1/users", "{not json"),
        ("PATCH", "/api/v1/users/ann", r#"{"type":"admin"}"#),
        ("POST", "/api/v1/groups", "{not json"),
        ("GET", "/api/v1/users", ""),
        ("GET", "/api/v1/groups/ops", ""),
        ("DELETE", "/api/v1/users/admin", ""),
    ] {
        let r = call(app(), method, path, &ann, body).await;
        assert_eq!((r.status, &r.json), (StatusCode::FORBIDDEN, &forbidden), "{method} {path}");
    }

    let r = call(app(), "DELETE", "/api/v1/users/ann", &a, "").await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = call(app(), "GET", "/api/v1/users/ann", &a, "").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = call(app(), "DELETE", "/api/v1/groups/ops", &a, "").await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);

    // Each change is audited with the token's owner as the actor.
    let r = call(app(), "GET", "/api/v1/audit?target=ann&actor=admin", &a, "").await;
    let actions: Vec<&str> =
        r.json["records"].as_array().unwrap().iter().map(|x| x["action"].as_str().unwrap()).collect();
    assert!(actions.len() >= 3, "{actions:?}");
    assert_eq!(actions.first(), Some(&"user.delete"), "{actions:?}");
    assert_eq!(actions.last(), Some(&"user.create"), "{actions:?}");
}
