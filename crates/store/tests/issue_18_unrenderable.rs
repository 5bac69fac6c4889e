//! Issue #18: one stored document that `serde_json` cannot read (here: one
//! nested 150 levels, which a filter can build although no source accepts
//! it) must not fail the search page, the field list or the live tail: it
//! is shown as a counted stand-in with an error, the others as they are.

use std::sync::Arc;
use std::time::Duration;

use sluice_core::{Event, Identity, Object, Value};
use sluice_query::api::Search;
use sluice_query::{Order, Principal, Query, SourcePattern, TimeRange};
use sluice_store::render::UNRENDERABLE;
use sluice_store::{Store, StoreOptions};

fn event(ts: i64, message: &str, extra: Option<Value>) -> Event {
    let mut f = Object::new();
    f.insert("message", Value::from(message));
    if let Some(v) = extra {
        f.insert("a", v);
    }
    let mut e = Event::from_fields(f);
    e.timestamp = ts;
    e.identity = Arc::new(Identity::new("g", "s", "h"));
    e
}

#[test]
fn issue_18_an_unreadable_document_is_a_stand_in_not_a_failed_page() {
    let dir = tempfile::tempdir().unwrap();
    let opts = StoreOptions { commit_interval: Duration::from_secs(3600), ..StoreOptions::default() };
    let store = Store::open(dir.path(), opts).unwrap();
    let all = Principal::new("admin", vec![SourcePattern::all()]);
    let mut tail = store.subscribe(&all, &Query::All);
    let mut deep = Value::Int(1);
    for _ in 0..150 {
        deep = Value::Array(vec![deep]);
    }
    let base = 1_700_000_000_000_000_000;
    store
        .append(
            &[event(base, "before", None), event(base + 1, "deep", Some(deep)), event(base + 2, "after", None)],
            &mut None,
        )
        .unwrap();
    store.commit().unwrap();

    let search = Search {
        query: Query::All,
        range: TimeRange::default(),
        size: 10,
        search_after: None,
        fields: None,
        order: Order::Newest,
        sort: None,
    };
    let page = store.search_sync(&all, &search).unwrap();
    assert_eq!(page.total, 3);
    let shown: Vec<(&str, bool)> =
        page.hits.iter().map(|h| (h.event["message"].as_str().unwrap_or("?"), h.error.is_some())).collect();
    assert_eq!(shown[0], ("after", false));
    assert_eq!(shown[2], ("before", false));
    let stand_in = &page.hits[1];
    let error = stand_in.error.as_deref().unwrap();
    assert!(error.contains("recursion limit exceeded"), "{error}");
    assert!(stand_in.event["message"].as_str().unwrap().contains("\"message\":\"deep\""));
    assert_eq!(stand_in.event["tags"], serde_json::json!([UNRENDERABLE]));
    assert_eq!(stand_in.event["@timestamp"], "2023-11-14T22:13:20.000000001Z");
    // Once for the tail (rendered when the commit published it), once here.
    assert_eq!(store.counters.unrenderable.get(), 2);

    let fields = store.fields_sync(&all, &TimeRange::default()).unwrap();
    assert!(fields.iter().any(|f| f.name == "message"));
    // The field list reads the store's columns (issue #22), never a stored
    // document: nothing more to render.
    assert_eq!(store.counters.unrenderable.get(), 2);

    let tailed: Vec<_> = std::iter::from_fn(|| tail.try_recv().ok()).collect();
    assert_eq!(tailed.len(), 3);
    assert_eq!(tailed.iter().filter(|h| h.error.is_some()).count(), 1);
    assert!(tailed.iter().all(|h| h.event.is_object()));
    assert_eq!(store.counters.unrenderable.get(), 2);
    store.close().unwrap();
}
