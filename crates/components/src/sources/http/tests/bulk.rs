//! The `_bulk` endpoint: items, ids, conflicts, refresh, limits and
//! malformed bodies.

use super::*;

#[tokio::test]
async fn bulk_reports_every_item_and_queues_only_good_documents() {
    let srv = Server::start("").await;
    let body = concat!(
        "{\"index\":{\"_index\":\"logs-a\",\"_id\":\"id-1\"}}\n",
        "{\"msg\":\"one\",\"@timestamp\":\"2024-01-02T03:04:05Z\"}\n",
        "{\"create\":{}}\n",
        "{\"msg\":\"two\"}\n",
        "{\"delete\":{\"_index\":\"logs-a\",\"_id\":\"gone\"}}\n",
        "{\"index\":{}}\n",
        "not json\n",
        "{\"update\":{\"_id\":\"u\"}}\n",
        "{\"doc\":{\"msg\":\"ignored\"}}\n",
        "{\"index\":{\"_id\":7}}\n",
        "[1,2]\n",
        "{\"frobnicate\":{}}\n",
        "{\"msg\":\"ignored too\"}\n",
        "{\"index\":{\"_index\":\"logs-c\"}}\n",
        "{\"msg\":\"three\",\"_index\":\"overwritten\"}\n",
    );
    let r = srv.request("POST", "/logs-b/_bulk", &[("Content-Type", "application/x-ndjson")], body.as_bytes()).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("x-elastic-product"), Some("Elasticsearch"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["errors"], true);
    assert!(v["took"].is_u64());
    let items = v["items"].as_array().unwrap();
    let shape: Vec<(String, u64)> = items
        .iter()
        .map(|it| {
            let (k, body) = it.as_object().unwrap().iter().next().unwrap();
            (k.clone(), body["status"].as_u64().unwrap())
        })
        .collect();
    let expected = [
        ("index", 201),
        ("create", 201),
        ("delete", 400),
        ("index", 400),
        ("update", 400),
        ("index", 400),
        ("frobnicate", 400),
        ("index", 201),
    ];
    assert_eq!(shape, expected.map(|(k, s)| (k.to_string(), s)).to_vec());
    assert_eq!(
        items[0]["index"],
        serde_json::json!({
            "_index": "logs-a", "_id": "id-1", "_version": 1, "result": "created", "status": 201,
            "_shards": {"total": 1, "successful": 1, "failed": 0}, "_seq_no": 0, "_primary_term": 1
        })
    );
    assert_eq!(items[1]["create"]["_index"], "logs-b");
    let id2 = items[1]["create"]["_id"].as_str().unwrap().to_string();
    assert_eq!(id2.len(), 20);
    assert_eq!(items[1]["create"]["_seq_no"], 1);
    assert_eq!(items[2]["delete"]["error"]["type"], "illegal_argument_exception");
    assert_eq!(items[2]["delete"]["_id"], "gone");
    assert_eq!(items[3]["index"]["error"]["type"], "mapper_parsing_exception");
    assert_eq!(items[3]["index"]["_index"], "logs-b");
    assert_eq!(items[4]["update"]["error"]["type"], "illegal_argument_exception");
    assert_eq!(items[5]["index"]["error"]["type"], "mapper_parsing_exception");
    assert!(items[5]["index"]["error"]["reason"].as_str().unwrap().contains("found array"));
    assert_eq!(items[5]["index"]["_id"], "7");
    let reason = items[6]["frobnicate"]["error"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("Malformed action/metadata line [12],") && reason.contains("[frobnicate]"), "{reason}");
    assert_eq!(items[7]["index"]["_index"], "logs-c");
    let id8 = items[7]["index"]["_id"].as_str().unwrap().to_string();
    assert_ne!(id2, id8);

    let events = srv.events();
    assert_eq!(events.len(), 3);
    let got: Vec<(Option<&str>, Option<&str>, Option<&str>)> =
        events.iter().map(|e| (str_field(e, "msg"), str_field(e, "_index"), str_field(e, "_id"))).collect();
    assert_eq!(
        got,
        vec![
            (Some("one"), Some("logs-a"), Some("id-1")),
            (Some("two"), Some("logs-b"), Some(id2.as_str())),
            (Some("three"), Some("logs-c"), Some(id8.as_str())),
        ]
    );
    assert_eq!(events[0].timestamp, sluice_core::codec::parse_timestamp("2024-01-02T03:04:05Z").unwrap());
    assert_eq!(srv.metrics.events_failed.get(), 2);
    assert_eq!(srv.counter("bulk_item_errors"), 5);
    assert_eq!(srv.metrics.events_in.get(), 3);
    assert_eq!(srv.metrics.events_out.get(), 3);

    // A clean request reports errors: false; PUT works as POST; seq_no goes on.
    let r = srv.request("PUT", "/_bulk", &[], b"{\"create\":{\"_index\":\"x\"}}\n{\"a\":1}\n").await;
    let v = r.json();
    assert_eq!(v["errors"], false);
    assert_eq!(v["items"][0]["create"]["_seq_no"], 3);
    assert_eq!(srv.events().len(), 4);
    // No index anywhere: a per-item error, not a request error.
    let r = srv.request("POST", "/_bulk", &[], b"{\"index\":{}}\n{\"a\":1}\n").await;
    let v = r.json();
    assert_eq!(v["items"][0]["index"]["status"], 400);
    assert_eq!(v["items"][0]["index"]["error"]["type"], "action_request_validation_exception");
    assert_eq!(srv.events().len(), 4);
    srv.stop().await;
}

/// Issue #18 (compatibility): an empty `_id` was stored as `""` (201);
/// `require_alias` was ignored. Elasticsearch refuses the first as a
/// whole request and answers the second per item (sluice has no
/// aliases, so every index named with it is "not an alias").
#[tokio::test]
async fn issue_18_bulk_refuses_an_empty_id_and_honours_require_alias() {
    let srv = Server::start("").await;
    let body = b"{\"index\":{\"_index\":\"a\",\"_id\":\"ok-1\"}}\n{\"n\":1}\n{\"create\":{\"_index\":\"a\",\"_id\":\"\"}}\n{\"n\":2}\n";
    let r = srv.request("POST", "/_bulk", &[], body).await;
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["error"]["type"], "action_request_validation_exception", "{v}");
    assert_eq!(v["error"]["reason"], "Validation Failed: 1: if _id is specified it must not be empty;", "{v}");
    assert_eq!(srv.events().len(), 0, "nothing of a refused body is queued");
    assert_eq!(srv.counter("bad_requests"), 1);

    let body = concat!(
        "{\"index\":{\"_index\":\"logs-a\",\"require_alias\":true}}\n{\"n\":1}\n",
        "{\"index\":{\"_index\":\"logs-a\",\"require_alias\":false,\"_id\":\"k\"}}\n{\"n\":2}\n",
    );
    let v = srv.request("POST", "/_bulk", &[], body.as_bytes()).await.json();
    assert_eq!(v["errors"], true);
    assert_eq!(v["items"][0]["index"]["status"], 404, "{v}");
    assert_eq!(v["items"][0]["index"]["error"]["type"], "index_not_found_exception");
    assert_eq!(
        v["items"][0]["index"]["error"]["reason"],
        "no such index [logs-a] and [require_alias] request flag is [true] and [logs-a] is not an alias"
    );
    assert_eq!(v["items"][1]["index"]["status"], 201);
    assert_eq!(v["items"][1]["index"]["_id"], "k", "an explicit _id is kept");
    // The URL flag applies to every action without its own.
    let r = srv.request("POST", "/logs-b/_bulk?require_alias=true", &[], b"{\"create\":{}}\n{\"n\":3}\n").await;
    let v = r.json();
    assert_eq!(v["items"][0]["create"]["status"], 404, "{v}");
    let events = srv.events();
    assert_eq!(events.len(), 1);
    assert_eq!(str_field(&events[0], "_id"), Some("k"));
    srv.stop().await;
}

/// Issue #18 (compatibility): integers beyond 64 bits sent through
/// `_bulk` keep every digit (as a string, ADR 0055), not a rounded float.
/// Issue #18 compatibility: `create` with an `_id` already stored
/// answered 201 and stored a second copy, so a retried bulk request
/// doubled its events. Elasticsearch answers 409 per item; so does
/// sluice now, within the request, across requests and after a restart.
#[tokio::test]
async fn issue_18_bulk_create_with_an_existing_id_is_a_409() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start_in("auth = \"none\"", None, Some(dir.path())).await;
    let first = "{\"create\":{\"_index\":\"logs\",\"_id\":\"a\"}}\n{\"n\":1}\n{\"create\":{\"_index\":\"logs\",\"_id\":\"b\"}}\n{\"n\":2}\n";
    let r = srv.request("POST", "/_bulk", &[], first.as_bytes()).await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["errors"], false, "{v}");
    assert_eq!(v["items"][0]["create"]["status"], 201);
    // The retry of the same body, plus a new create, an index of an
    // existing id (Elasticsearch overwrites: sluice appends) and the
    // same new id twice in one body.
    let retry = format!(
        "{first}{}{}{}{}",
        "{\"create\":{\"_index\":\"logs\",\"_id\":\"c\"}}\n{\"n\":3}\n",
        "{\"create\":{\"_index\":\"other\",\"_id\":\"a\"}}\n{\"n\":4}\n",
        "{\"create\":{\"_index\":\"logs\",\"_id\":\"c\"}}\n{\"n\":5}\n",
        "{\"index\":{\"_index\":\"logs\",\"_id\":\"a\"}}\n{\"n\":6}\n",
    );
    let v = srv.request("POST", "/_bulk", &[], retry.as_bytes()).await.json();
    assert_eq!(v["errors"], true, "{v}");
    let statuses: Vec<u64> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_object().unwrap().values().next().unwrap()["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [409, 409, 201, 201, 409, 201], "{v}");
    assert_eq!(v["items"][0]["create"]["error"]["type"], "version_conflict_engine_exception");
    assert_eq!(
        v["items"][0]["create"]["error"]["reason"],
        "[a]: version conflict, document already exists (current version [1])"
    );
    assert_eq!(v["items"][1]["create"]["_id"], "b");
    let ns: Vec<i64> = srv.events().iter().map(|e| e.fields().get("n").and_then(Value::as_i64).unwrap()).collect();
    assert_eq!(ns, [1, 2, 3, 4, 6], "no second copy of a, b or c");
    assert_eq!(srv.counter("bulk_conflicts"), 3);
    srv.stop().await;
    // Started again on the same data directory (after kill -9 the
    // ledger file is all there is): the ids are still taken.
    let srv = Server::start_in("auth = \"none\"", None, Some(dir.path())).await;
    let v = srv.request("POST", "/_bulk", &[], first.as_bytes()).await.json();
    assert_eq!(v["items"][0]["create"]["status"], 409, "{v}");
    assert_eq!(v["items"][1]["create"]["status"], 409, "{v}");
    assert!(srv.events().is_empty());
    srv.stop().await;
}

/// Issue #18 compatibility: `refresh=true|wait_for` answered at once;
/// now only once the sinks acknowledged (the capture's token resolved),
/// or after `refresh_timeout`, counted. An unknown value is a 400.
#[tokio::test]
async fn issue_18_bulk_refresh_wait_for_answers_after_the_sinks() {
    let cap = Arc::new(crate::testkit::AckCapture::default());
    let out: Arc<dyn Output> = Arc::clone(&cap) as Arc<dyn Output>;
    let srv = Server::start_with("auth = \"none\"\nrefresh_timeout = \"300ms\"", Some(out)).await;
    let body = b"{\"create\":{\"_index\":\"logs\"}}\n{\"n\":1}\n";
    let r = srv.request("POST", "/_bulk?refresh=maybe", &[], body).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["reason"], "Unknown value for refresh: [maybe].");
    assert!(cap.events.lock().is_empty());
    for refresh in ["wait_for", "true"] {
        let addr = srv.addr;
        let path = format!("/_bulk?refresh={refresh}");
        let req = tokio::spawn(async move { request(addr, "POST", &path, &[], body).await });
        let deadline = Instant::now() + Duration::from_secs(5);
        while cap.tokens.lock().is_empty() {
            assert!(Instant::now() < deadline, "never queued");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!req.is_finished(), "{refresh}: answered before the sinks acknowledged");
        cap.tokens.lock().remove(0).delivered();
        let r = tokio::time::timeout(Duration::from_secs(5), req).await.unwrap().unwrap();
        assert_eq!(r.status, 200, "{refresh}");
        assert_eq!(r.json()["errors"], false);
    }
    assert_eq!(srv.counter("refresh_waits_failed"), 0);
    // A sink that never acknowledges: answered after the timeout, counted.
    let t0 = Instant::now();
    let r = srv.request("POST", "/_bulk?refresh", &[], body).await;
    assert_eq!(r.status, 200);
    assert!(t0.elapsed() >= Duration::from_millis(300), "{:?}", t0.elapsed());
    assert_eq!(srv.counter("refresh_waits_failed"), 1);
    // Without refresh: at once.
    let r = srv.request("POST", "/_bulk?refresh=false", &[], body).await;
    assert_eq!(r.status, 200);
    assert_eq!(cap.events.lock().len(), 4);
    srv.stop().await;
}

#[tokio::test]
async fn issue_18_bulk_keeps_the_digits_of_integers_beyond_64_bits() {
    let srv = Server::start("").await;
    let body = concat!(
        "{\"index\":{\"_index\":\"a\"}}\n",
        "{\"big\":123456789012345678901234567890,\"neg\":-9223372036854775809,\"small\":42}\n",
    );
    let v = srv.request("POST", "/_bulk", &[], body.as_bytes()).await.json();
    assert_eq!(v["errors"], false, "{v}");
    let events = srv.events();
    assert_eq!(events.len(), 1);
    assert_eq!(str_field(&events[0], "big"), Some("123456789012345678901234567890"));
    assert_eq!(str_field(&events[0], "neg"), Some("-9223372036854775809"));
    let json = sluice_core::codec::to_json_string(&events[0]);
    assert!(json.contains("\"small\":42"), "an integer within 64 bits stays a number: {json}");
    srv.stop().await;
}

#[tokio::test]
async fn oversized_bulk_document_is_an_item_error() {
    let srv = Server::start("max_line_bytes = 32\n").await;
    let body = format!(
            "{{\"index\":{{\"_index\":\"a\"}}}}\n{{\"msg\":\"{}\"}}\n{{\"index\":{{\"_index\":\"a\"}}}}\n{{\"msg\":\"ok\"}}\n",
            "x".repeat(40)
        );
    let v = srv.request("POST", "/_bulk", &[], body.as_bytes()).await.json();
    assert_eq!(v["errors"], true);
    assert_eq!(v["items"][0]["index"]["status"], 400);
    assert!(v["items"][0]["index"]["error"]["reason"].as_str().unwrap().contains("max_line_bytes (32)"), "{v}");
    assert_eq!(v["items"][1]["index"]["status"], 201);
    let events = srv.events();
    assert_eq!(events.len(), 1);
    assert_eq!(str_field(&events[0], "msg"), Some("ok"));
    assert_eq!(srv.counter("oversized_frames"), 1);
    assert_eq!(srv.metrics.events_failed.get(), 1);
    srv.stop().await;
}

#[tokio::test]
async fn malformed_bulk_bodies_are_rejected_whole() {
    let srv = Server::start("").await;
    let cases: [(&[u8], &str); 5] = [
        (b"", "parse_exception"),
        (b"\n\n", "parse_exception"),
        (b"{\"index\":{\"_index\":\"a\"}}\n{\"ok\":1}\nnot an action\n", "x_content_parse_exception"),
        (b"{\"index\":{\"_index\":\"a\"}}\n{\"ok\":1}\n{\"index\":{\"_index\":\"a\"}}\n", "illegal_argument_exception"),
        (b"{\"index\":{},\"create\":{}}\n{\"ok\":1}\n", "illegal_argument_exception"),
    ];
    for (body, kind) in cases {
        let r = srv.request("POST", "/_bulk", &[], body).await;
        assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(body));
        let v = r.json();
        assert_eq!(v["error"]["type"], kind, "{v}");
        assert_eq!(v["error"]["root_cause"][0]["type"], kind, "{v}");
        assert_eq!(v["status"], 400);
    }
    let r = srv.request("POST", "/_bulk", &[], b"").await;
    assert_eq!(r.json()["error"]["reason"], "request body is required");
    assert_eq!(srv.counter("bad_requests"), 6);
    assert!(srv.events().is_empty());
    assert_eq!(srv.metrics.events_in.get(), 0);
    srv.stop().await;
}
