//! Lifecycle: reopen keeps data and `_seq` continues; retention by age and
//! by bytes; acknowledgements only after commit; a killed process keeps
//! every acknowledged event; shared instances per path.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use sluice_core::{AckToken, Delivery, Event, Identity, Object, QueuePosition, Value};
use sluice_query::api::{Aggregate, Search};
use sluice_query::{Aggregation, AggregationResult, Order, Principal, Query, SearchBackend, SourcePattern, TimeRange};
use sluice_store::{PartitionSpan, Store, StoreError, StoreOptions};

const HOUR: i64 = 3_600_000_000_000;
const BASE: i64 = 1_700_000_000_000_000_000 / HOUR * HOUR;

fn ev(ts: i64, batch: u64, n: usize) -> Event {
    let mut f = Object::new();
    f.insert("message", Value::from(format!("event {n} of batch {batch}")));
    f.insert("batch", Value::Int(batch as i64));
    let mut e = Event::from_fields(f);
    e.timestamp = ts;
    e.identity = Arc::new(Identity::new("g", "s", "h"));
    e
}

fn all() -> Principal {
    Principal::new("admin", vec![SourcePattern::all()])
}

/// The newest event of all.
fn newest_one() -> Search {
    Search {
        query: Query::All,
        range: TimeRange::default(),
        size: 1,
        search_after: None,
        fields: None,
        order: Order::Newest,
        sort: None,
    }
}

fn total(store: &Store) -> u64 {
    store.search_sync(&all(), &newest_one()).unwrap().total
}

fn quiet() -> StoreOptions {
    // Commits only when asked (or at 1M pending).
    StoreOptions { commit_interval: Duration::from_secs(3600), commit_events: 1_000_000, ..StoreOptions::default() }
}

fn token() -> (AckToken, mpsc::Receiver<Delivery>) {
    let (tx, rx) = mpsc::channel();
    (AckToken::new(move |d| tx.send(d).unwrap()), rx)
}

#[test]
fn reopen_keeps_data_and_seq_continues() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), quiet()).unwrap();
    let events: Vec<Event> = (0..100).map(|i| ev(BASE + i as i64, 0, i)).collect();
    store.append(&events, &mut None).unwrap();
    store.commit().unwrap();
    assert_eq!(store.next_seq(), 101);
    store.close().unwrap();
    drop(store);
    let store = Store::open(dir.path(), quiet()).unwrap();
    assert_eq!(total(&store), 100);
    assert_eq!(store.next_seq(), 101);
    store.append(&[ev(BASE + 5 * 86_400_000_000_000, 1, 0)], &mut None).unwrap();
    store.commit().unwrap();
    let page = store.search_sync(&all(), &newest_one()).unwrap();
    assert_eq!(page.hits[0].id, "101");
    assert_eq!(store.partitions().len(), 2);
    store.close().unwrap();
}

#[test]
fn same_path_shares_one_instance_and_conflicts_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path(), quiet()).unwrap();
    let b = Store::open(dir.path().join("."), quiet()).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert!(Arc::ptr_eq(&a, &Store::get(dir.path()).unwrap()));
    let other = StoreOptions { partition: PartitionSpan::Hour, ..quiet() };
    assert!(matches!(Store::open(dir.path(), other.clone()), Err(StoreError::Conflict { .. })));
    a.close().unwrap();
    drop((a, b));
    // On disk the layout was written daily: an hourly open is refused.
    assert!(matches!(Store::open(dir.path(), other), Err(StoreError::Conflict { .. })));
}

#[test]
fn retention_by_age_drops_old_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let opts =
        StoreOptions { partition: PartitionSpan::Hour, retention_age: Some(Duration::from_secs(7200)), ..quiet() };
    let store = Store::open(dir.path(), opts).unwrap();
    for h in 0..4 {
        let events: Vec<Event> =
            (0..10 * (h + 1)).map(|i| ev(BASE + h as i64 * HOUR + i as i64, h, i as usize)).collect();
        store.append(&events, &mut None).unwrap();
    }
    store.commit().unwrap();
    assert_eq!(store.partitions().len(), 4);
    // "now" is the end of hour 3: hours 0 and 1 ended more than 2 h ago.
    let now = BASE + 4 * HOUR;
    let dropped = store.apply_retention(now).unwrap();
    let names: Vec<String> = dropped.iter().map(|d| d.name.clone()).collect();
    let expect: Vec<String> =
        [0, 1].iter().map(|h| sluice_store::partition::name_of(PartitionSpan::Hour, BASE + h * HOUR)).collect();
    assert_eq!(names, expect);
    assert_eq!(dropped.iter().map(|d| d.events).collect::<Vec<_>>(), vec![10, 20]);
    assert_eq!(total(&store), 30 + 40);
    assert_eq!(store.counters.partitions_dropped.load(std::sync::atomic::Ordering::Relaxed), 2);
    // What the Operations page shows (issue #22): size, partitions, events, drops.
    let c: std::collections::BTreeMap<&str, u64> = SearchBackend::counters(&*store).into_iter().collect();
    assert_eq!(c["sluice_store_partitions"], 2);
    assert_eq!(c["sluice_store_stored_events"], 70);
    assert_eq!(c["sluice_store_disk_bytes"], store.disk_bytes());
    assert!(c["sluice_store_disk_bytes"] > 0);
    assert_eq!((c["sluice_store_partitions_dropped_total"], c["sluice_store_retention_events_total"]), (2, 30));
    assert!(!dir.path().join(&expect[0]).exists());
    // _seq keeps increasing after the oldest data is gone, across a reopen too.
    store.close().unwrap();
    drop(store);
    let opts =
        StoreOptions { partition: PartitionSpan::Hour, retention_age: Some(Duration::from_secs(7200)), ..quiet() };
    let store = Store::open(dir.path(), opts).unwrap();
    assert_eq!(store.next_seq(), 101);
    store.close().unwrap();
}

#[test]
fn retention_by_bytes_drops_oldest_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions { partition: PartitionSpan::Hour, ..quiet() }).unwrap();
    for h in 0..4 {
        let events: Vec<Event> = (0..500).map(|i| ev(BASE + h as i64 * HOUR + i as i64, h, i)).collect();
        store.append(&events, &mut None).unwrap();
    }
    store.commit().unwrap();
    let parts = store.partitions();
    let newest_two: u64 = parts[2..].iter().map(|p| p.bytes).sum();
    store.close().unwrap();
    drop(store);
    let opts = StoreOptions { partition: PartitionSpan::Hour, retention_bytes: Some(newest_two + 100), ..quiet() };
    let store = Store::open(dir.path(), opts).unwrap();
    let dropped = store.apply_retention(BASE).unwrap();
    assert_eq!(
        dropped.iter().map(|d| d.name.clone()).collect::<Vec<_>>(),
        vec![parts[0].name.clone(), parts[1].name.clone()]
    );
    assert_eq!(
        store.partitions().iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
        vec![parts[2].name.clone(), parts[3].name.clone()]
    );
    assert_eq!(total(&store), 1000);
    // Under the limit now: nothing more goes.
    assert!(store.apply_retention(BASE).unwrap().is_empty());
    store.close().unwrap();
}

#[test]
fn acks_resolve_only_after_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), quiet()).unwrap();
    let (t, rx) = token();
    store.append(&[ev(BASE, 0, 0), ev(BASE + 1, 0, 1)], &mut Some(t)).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(rx.try_recv().is_err(), "acked before commit");
    assert_eq!(total(&store), 0, "searchable before commit");
    store.commit().unwrap();
    assert_eq!(rx.try_recv().unwrap(), Delivery::Delivered);
    assert_eq!(total(&store), 2);
    // The timer commits too, and commit_events commits inline.
    let opts =
        StoreOptions { commit_interval: Duration::from_millis(100), commit_events: 10, ..StoreOptions::default() };
    let dir2 = tempfile::tempdir().unwrap();
    let s2 = Store::open(dir2.path(), opts).unwrap();
    let (t, rx) = token();
    s2.append(&[ev(BASE, 0, 0)], &mut Some(t)).unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(2)).unwrap(), Delivery::Delivered);
    let (t, rx) = token();
    let ten: Vec<Event> = (0..10).map(|i| ev(BASE, 1, i)).collect();
    s2.append(&ten, &mut Some(t)).unwrap();
    assert_eq!(rx.try_recv().unwrap(), Delivery::Delivered, "commit_events reached: committed inline");
    store.close().unwrap();
    s2.close().unwrap();
}

const DAY: i64 = 24 * HOUR;

/// Batch `batch` of the crash test: 500 events, half of them a day later
/// (two partitions), as queue record `batch` of shard 0 (epoch 0x5eed).
/// An event without an origin (`Event::NO_ORIGIN`) is never skipped.
fn crash_batch(batch: u64) -> (Vec<Event>, QueuePosition) {
    let events = (0..500)
        .map(|i| {
            let mut e = ev(BASE + (i % 2) as i64 * DAY + (batch * 500 + i) as i64, batch, i as usize);
            e.set_origin(0); // the batch's only record, as the pipeline's worker marks it
            e
        })
        .collect();
    let offset = 16 + batch * 1000;
    (events, QueuePosition { epoch: 0x5eed, shard: 0, segment: 1, offset, end: offset + 1000, floor: (0, 0) })
}

/// Child side of [`killed_process_keeps_acked_events`]: appends batches,
/// prints each acknowledged batch, then aborts with a batch in flight.
#[test]
fn kill_child_helper() {
    let Ok(dir) = std::env::var("SLUICE_STORE_KILL_DIR") else { return };
    let opts = StoreOptions { commit_interval: Duration::from_millis(50), ..StoreOptions::default() };
    let store = Store::open(&dir, opts).unwrap();
    for batch in 0..13u64 {
        let (events, position) = crash_batch(batch);
        let (t, rx) = token();
        store.append(&events, &mut Some(t.with_origins(vec![position]))).unwrap();
        if batch < 10 {
            assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), Delivery::Delivered);
            println!("ACKED {batch}");
            use std::io::Write;
            std::io::stdout().flush().unwrap();
        }
    }
    std::process::abort();
}

#[test]
fn killed_process_keeps_acked_events() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["kill_child_helper", "--exact", "--nocapture", "--test-threads=1"])
        .env("SLUICE_STORE_KILL_DIR", dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success(), "the child must die by abort");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let acked: Vec<u64> =
        stdout.lines().filter_map(|l| l.split("ACKED ").nth(1).and_then(|n| n.trim().parse().ok())).collect();
    assert_eq!(acked, (0..10).collect::<Vec<_>>(), "child output: {stdout}");
    let store = Store::open(dir.path(), quiet()).unwrap();
    let a = Aggregate {
        query: Query::All,
        range: TimeRange::default(),
        aggs: [("b".to_string(), Aggregation::Terms { field: "batch".into(), size: Some(100) })].into(),
    };
    let r = store.aggregate_sync(&all(), &a).unwrap();
    let AggregationResult::Terms { buckets, .. } = &r.aggs["b"] else { panic!() };
    for b in &acked {
        let n = buckets.iter().find(|x| x.key == serde_json::json!(b)).map(|x| x.count);
        assert_eq!(n, Some(500), "acked batch {b} after the kill");
    }
    // _seq continues after the last committed one.
    assert!(store.next_seq() > 5000);
    let committed = total(&store);
    assert!(committed >= 5000, "{committed}");

    // Issue #18: the queue delivers every record again from its checkpoint
    // (here all 13: the worst case). The store skips the events it had
    // committed, per record and partition, and stores the rest: each batch
    // exactly once.
    for batch in 0..13u64 {
        let (events, position) = crash_batch(batch);
        let (t, rx) = token();
        store.append(&events, &mut Some(t.with_origins(vec![position]))).unwrap();
        store.commit().unwrap();
        assert_eq!(rx.try_recv().unwrap(), Delivery::Delivered);
    }
    let r = store.aggregate_sync(&all(), &a).unwrap();
    let AggregationResult::Terms { buckets, .. } = &r.aggs["b"] else { panic!() };
    let counts: Vec<(u64, u64)> = buckets.iter().map(|x| (x.key.as_u64().unwrap(), x.count)).collect();
    assert_eq!(counts.len(), 13, "{counts:?}");
    assert!(counts.iter().all(|(_, n)| *n == 500), "a batch stored twice or partly: {counts:?}");
    assert_eq!(total(&store), 6500);
    let skipped = store.counters.replayed_skipped.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(skipped, committed, "every committed event of a replayed record was skipped");
    // The positions survive a reopen: a second replay stores nothing.
    store.close().unwrap();
    drop(store);
    let store = Store::open(dir.path(), quiet()).unwrap();
    let (events, position) = crash_batch(12);
    store.append(&events, &mut Some(AckToken::none().with_origins(vec![position]))).unwrap();
    store.commit().unwrap();
    assert_eq!(total(&store), 6500);
    // Events that name no record of the batch (made by a filter's flush)
    // are never taken for a replay.
    let (mut events, position) = crash_batch(12);
    events.iter_mut().for_each(|e| e.set_origin(Event::NO_ORIGIN));
    store.append(&events, &mut Some(AckToken::none().with_origins(vec![position]))).unwrap();
    store.commit().unwrap();
    assert_eq!(total(&store), 7000);
    store.close().unwrap();
}

#[test]
fn dropped_without_close_keeps_acked_events() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path(), quiet()).unwrap();
        let (t, rx) = token();
        store.append(&[ev(BASE, 0, 0), ev(BASE, 0, 1)], &mut Some(t)).unwrap();
        store.commit().unwrap();
        assert_eq!(rx.try_recv().unwrap(), Delivery::Delivered);
    }
    let store = Store::open(dir.path(), quiet()).unwrap();
    assert_eq!(total(&store), 2);
    store.close().unwrap();
}

#[test]
fn slow_tail_subscriber_drops_and_counts_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), quiet()).unwrap();
    let mut rx = store.subscribe(&all(), &Query::All);
    let n = sluice_store::tail::TAIL_CHANNEL + 100;
    let events: Vec<Event> = (0..n).map(|i| ev(BASE + i as i64, 0, i)).collect();
    store.append(&events, &mut None).unwrap();
    store.commit().unwrap(); // must not wait for the subscriber
    assert_eq!(store.counters.tail_dropped.load(std::sync::atomic::Ordering::Relaxed), 100);
    let mut got = 0;
    while rx.try_recv().is_ok() {
        got += 1;
    }
    assert_eq!(got, sluice_store::tail::TAIL_CHANNEL);
    // A closed subscriber is removed at the next publish.
    drop(rx);
    store.append(&events[..1], &mut None).unwrap();
    store.commit().unwrap();
    assert_eq!(store.counters.tail_dropped.load(std::sync::atomic::Ordering::Relaxed), 100);
    store.close().unwrap();
}

#[test]
fn partitions_of_another_schema_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), quiet()).unwrap();
    store.append(&[ev(BASE, 0, 0)], &mut None).unwrap();
    store.commit().unwrap();
    store.close().unwrap();
    drop(store);
    // Make the partition look as if schema 1 (attrs inverted-indexed,
    // `_source` as bytes) had written it.
    let part = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("meta.json").exists())
        .unwrap();
    let meta = std::fs::read_to_string(part.join("meta.json")).unwrap();
    let old = meta.replace(r#"\"schema\":2"#, r#"\"schema\":1"#);
    assert_ne!(meta, old, "the commit payload names the schema version");
    std::fs::write(part.join("meta.json"), old).unwrap();
    let err = Store::open(dir.path(), quiet()).err().expect("a schema 1 partition is refused");
    assert!(matches!(err, StoreError::Incompatible { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("written with store schema 1, this version reads schema 2 only"), "{msg}");
}
