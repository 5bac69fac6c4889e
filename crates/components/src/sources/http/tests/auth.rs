//! Ingest authentication: tokens in each form shippers send them, the
//! token's identity, and browser requests refused.

use super::*;

/// Issue #18: `/ndjson` and `/_bulk` accepted unauthenticated posts. Every
/// request needs an ingest token, in each form the shippers send it, and
/// the token's identity is the events' — whatever the payload says.
#[tokio::test]
async fn issue_18_ingest_needs_a_token_and_the_token_sets_the_identity() {
    let tokens = "[tokens.acme]\ntoken = \"acme-ingest-token-000\"\ngroup = \"acme\"\nsubgroup = \"web\"\n\
                      [tokens.globex]\ntoken = \"globex-ingest-token-0\"\ngroup = \"globex\"\nhost = \"gw-1\"\n";
    let srv = Server::start(tokens).await;
    // base64("elastic:acme-ingest-token-000"), base64("elastic:wrong"),
    // base64("key-id:acme-ingest-token-000") (Filebeat's api_key: "key-id:acme-ingest-token-000")
    let ok = [
        ("Authorization", "Bearer acme-ingest-token-000"),
        ("Authorization", "ApiKey acme-ingest-token-000"),
        ("Authorization", "ApiKey a2V5LWlkOmFjbWUtaW5nZXN0LXRva2VuLTAwMA=="),
        ("Authorization", "Basic ZWxhc3RpYzphY21lLWluZ2VzdC10b2tlbi0wMDA="),
    ];
    let bad: [&[(&str, &str)]; 4] = [
        &[("Authorization", "")],
        &[("Authorization", "Bearer acme-ingest-token-00")],
        &[("Authorization", "Basic ZWxhc3RpYzp3cm9uZw==")],
        &[("Authorization", "Token acme-ingest-token-000")],
    ];
    for h in bad {
        let r = srv.request("GET", "/", h, b"").await;
        assert_eq!(r.status, 401, "{h:?}");
        assert_eq!(r.json()["error"]["type"], "security_exception");
        assert_eq!(r.header("x-elastic-product"), Some("Elasticsearch"));
        assert!(r.header("www-authenticate").is_some());
    }
    let none = [("Authorization", "")];
    let r = srv.request("POST", "/_bulk", &none, b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1}\n").await;
    assert_eq!(r.status, 401);
    let r = srv.request("POST", "/ndjson", &none, b"{\"a\":1}\n").await;
    assert_eq!(r.status, 401);
    assert_eq!(srv.counter("auth_failures"), 6);
    assert!(srv.events().is_empty());
    for h in ok {
        let r = srv.request("GET", "/", &[h], b"").await;
        assert_eq!(r.status, 200, "{h:?}");
    }
    // The payload's identity keys are not the sender's to choose.
    let r = srv
        .request("POST", "/_bulk", &[ok[2]], b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1,\"@group\":\"globex\"}\n")
        .await;
    assert_eq!(r.json()["items"][0]["index"]["status"], 201);
    let globex = [("Authorization", "Bearer globex-ingest-token-0")];
    let r = srv.request("POST", "/ndjson", &globex, b"{\"a\":2,\"@group\":\"acme\",\"@host\":\"x\"}\n").await;
    assert_eq!(r.status, 200);
    let got: Vec<(String, String, String)> = srv
        .events()
        .iter()
        .map(|e| (e.identity.group.clone(), e.identity.subgroup.clone(), e.identity.host.clone()))
        .collect();
    assert_eq!(
        got,
        vec![("acme".into(), "web".into(), String::new()), ("globex".into(), String::new(), "gw-1".into())]
    );
    assert!(srv.events().iter().all(|e| e.fields().get(&"@group").is_none()));
    assert_eq!(srv.counter("auth_failures"), 6);
    srv.stop().await;
}

/// Issue #18: a cross-site `text/plain` post was stored. Requests a web
/// page can make are refused on the ingest routes, token or not.
#[tokio::test]
async fn issue_18_browser_simple_requests_are_refused_on_ingest_routes() {
    let srv = Server::start("").await;
    let bulk = b"{\"index\":{\"_index\":\"a\"}}\n{\"a\":1}\n";
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16);
    let refused: [Case; 6] = [
        ("/ndjson", &[("Content-Type", "text/plain")], 415),
        ("/_bulk", &[("Content-Type", "text/plain;charset=UTF-8")], 415),
        ("/ndjson", &[("Content-Type", "application/x-www-form-urlencoded")], 415),
        ("/logs/_bulk", &[("Content-Type", "multipart/form-data; boundary=x")], 415),
        ("/ndjson", &[("Content-Type", "application/json"), ("Origin", "https://evil.example")], 403),
        ("/_bulk", &[("Sec-Fetch-Site", "cross-site")], 403),
    ];
    for (path, h, status) in refused {
        let r = srv.request("POST", path, h, bulk).await;
        assert_eq!(r.status, status, "{path} {h:?}");
        assert_eq!(r.json()["error"]["type"], "security_exception");
    }
    assert_eq!(srv.counter("browser_requests_refused"), 6);
    assert!(srv.events().is_empty());
    // Shippers' content types, and no Origin, are served.
    for ct in ["application/x-ndjson", "application/json", ""] {
        let r = srv.request("POST", "/_bulk", &[("Content-Type", ct)], bulk).await;
        assert_eq!(r.status, 200, "{ct}");
    }
    assert_eq!(srv.events().len(), 3);
    // Not an ingest route: the handshake answers a browser as before.
    let r = srv.request("GET", "/", &[("Origin", "https://evil.example")], b"").await;
    assert_eq!(r.status, 200);
    assert_eq!(srv.counter("browser_requests_refused"), 6);
    srv.stop().await;
}

#[tokio::test]
async fn auth_none_serves_without_tokens_but_still_refuses_browsers() {
    let srv = Server::start("auth = \"none\"\n").await;
    let r = srv.request("POST", "/ndjson", &[("Authorization", "")], b"{\"a\":1}\n").await;
    assert_eq!(r.status, 200);
    let r = srv.request("POST", "/ndjson", &[("Content-Type", "text/plain")], b"{\"a\":1}\n").await;
    assert_eq!(r.status, 415);
    assert_eq!(srv.events().len(), 1);
    assert!(srv.events()[0].identity.group.is_empty());
    srv.stop().await;
}
