//! `store`: indexes events into the embedded store (`sluice-store`), which
//! the HTTP search API reads.
//!
//! **Exactly once.** A batch from a persisted queue carries its records'
//! queue positions (`AckToken::origins`); the store commits them with the
//! documents and skips the events of a record it already committed when the
//! queue delivers it again after a crash (counted in
//! `replayed_events_skipped`; docs/adr/0060-exactly-once-into-the-store.md).
//!
//! Acknowledgement: the sink takes over each batch's ack token and the
//! store resolves it only after the index commit that made the batch
//! durable (every `commit_interval`, as soon as `commit_events` are
//! pending, or when appends paused for 20 ms with at least 1024 events
//! pending — a queue waiting at its bound of unacknowledged events does not
//! wait for the timer). Indexing and commits run off the async executor
//! (blocking pool and the store's own threads).
//!
//! **Expired on arrival.** With `retention_age`, an event whose partition
//! retention already drops (its whole span ended more than `retention_age`
//! ago: a replayed archive, a sender with a wrong clock) is counted in
//! `events_expired_on_arrival` (in `/_node/stats` under the sink's
//! `counters`, and `/metrics`) and handled by `on_expired`:
//! - `"keep_until_partition_ages_out"` (default): stored like any event;
//!   retention deletes it with its partition at its next check (within 10 s);
//! - `"drop"`: not stored, acknowledged, counted in `events_dropped` too;
//! - `"dead_letter"`: not stored; appended to `dead_letter_path` as
//!   `{"error": …, "document": …}` (crate::dead_letter) and counted in
//!   `dead_letter_events`; the batch is acknowledged once the line is
//!   written (a failed write retries the batch).
//!
//! A batch with expired events also logs one warning (count, first event
//! time, cutoff) — never one per event.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::codec::format_timestamp;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration};
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::{AckToken, Event};
use sluice_store::{PartitionSpan, Store, StoreOptions};

use crate::dead_letter;

/// Registry entry.
pub const SPEC: SinkSpec = SinkSpec {
    name: "store",
    summary: "the embedded indexed store searched by the HTTP API",
    example: "path = \"/tmp/sluice-example-store\"\npartition = \"1d\"\nretention_age = \"30d\"\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Store directory; default `<data_dir>/store`.
    #[serde(default)]
    path: Option<PathBuf>,
    /// Event time per partition: `"1h"` or `"1d"`.
    #[serde(default = "default_partition")]
    partition: String,
    /// Drop partitions whose time span ended longer ago than this.
    #[serde(default)]
    retention_age: Option<HumanDuration>,
    /// Drop the oldest partitions while the store is larger than this.
    #[serde(default)]
    retention_bytes: Option<ByteSize>,
    /// Commit (and acknowledge) at least this often.
    #[serde(default = "default_commit_interval")]
    commit_interval: HumanDuration,
    /// Commit as soon as this many events are pending.
    #[serde(default = "default_commit_events")]
    commit_events: usize,
    /// Indexing threads per partition writer (1–8; default: 2, or 1 on a
    /// one-core machine).
    #[serde(default)]
    writer_threads: Option<usize>,
    /// Threads one search or aggregation reads its segments with (1–64;
    /// default: one per core, at most 8).
    #[serde(default)]
    search_threads: Option<usize>,
    /// Memory of the search result cache (per-segment results of searches
    /// and aggregations over committed segments; default 64MiB; 0 turns it
    /// off).
    #[serde(default)]
    result_cache_bytes: Option<ByteSize>,
    /// Entries of the search result cache, at most (default 10000; 0 turns it off).
    #[serde(default)]
    result_cache_entries: Option<usize>,
    /// What happens to an event that retention would delete at once (see
    /// the module docs).
    #[serde(default)]
    on_expired: OnExpired,
    /// Where `on_expired = "dead_letter"` appends those events (ndjson).
    #[serde(default)]
    dead_letter_path: Option<PathBuf>,
}

/// The policy for events expired on arrival.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum OnExpired {
    /// Stored; deleted with their partition at the next retention check.
    #[default]
    KeepUntilPartitionAgesOut,
    /// Not stored; acknowledged and counted.
    Drop,
    /// Not stored; appended to `dead_letter_path`.
    DeadLetter,
}

fn default_partition() -> String {
    "1d".into()
}

fn default_commit_interval() -> HumanDuration {
    HumanDuration(std::time::Duration::from_secs(1))
}

fn default_commit_events() -> usize {
    sluice_store::DEFAULT_COMMIT_EVENTS
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Sink>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let partition = PartitionSpan::parse(&c.partition).map_err(|e| cx.error("partition", e.to_string()))?;
    let defaults = StoreOptions::default();
    let opts = StoreOptions {
        partition,
        retention_age: c.retention_age.map(|d| d.0),
        retention_bytes: c.retention_bytes.map(|b| b.0),
        commit_interval: c.commit_interval.0,
        commit_events: c.commit_events,
        writer_threads: c.writer_threads.unwrap_or(defaults.writer_threads),
        search_threads: c.search_threads.unwrap_or(defaults.search_threads),
        result_cache_bytes: c
            .result_cache_bytes
            .map_or(defaults.result_cache_bytes, |b| usize::try_from(b.0).unwrap_or(usize::MAX)),
        result_cache_entries: c.result_cache_entries.unwrap_or(defaults.result_cache_entries),
        ..defaults
    };
    if let Err(e) = opts.validate() {
        let key = match &e {
            sluice_store::StoreError::Option { key, .. } => *key,
            _ => "path",
        };
        return Err(cx.error(key, e.to_string()));
    }
    match (c.on_expired, &c.dead_letter_path) {
        (OnExpired::DeadLetter, None) => {
            return Err(cx.error("dead_letter_path", "on_expired = \"dead_letter\" needs a dead_letter_path"))
        }
        (OnExpired::DeadLetter, Some(_)) | (_, None) => {}
        (_, Some(_)) => {
            return Err(cx.error("dead_letter_path", "is only used with on_expired = \"dead_letter\""));
        }
    }
    if c.on_expired != OnExpired::KeepUntilPartitionAgesOut && c.retention_age.is_none() {
        return Err(cx.error("on_expired", "needs retention_age (without it no event expires)"));
    }
    let path = c.path.unwrap_or_else(|| cx.data_dir.join("store"));
    if cx.dry_run {
        // `sluice validate`: an existing store must fit these options; a
        // missing one is created at start, not now.
        Store::check(&path, &opts).map_err(|e| cx.error("path", e.to_string()))?;
        return Ok(Box::new(Unopened));
    }
    let store = Store::open(&path, opts).map_err(|e| cx.error("path", e.to_string()))?;
    // Search and tail count stored events they show as a stand-in here.
    cx.metrics.share_counter("unrenderable_events", Arc::clone(&store.counters.unrenderable));
    let m = &cx.metrics;
    Ok(Box::new(StoreSink {
        store,
        on_expired: c.on_expired,
        dead_letter_path: c.dead_letter_path,
        counters: Counters {
            expired: m.counter("events_expired_on_arrival"),
            dead_letter: m.counter("dead_letter_events"),
            replayed: m.counter("replayed_events_skipped"),
        },
        metrics: Arc::clone(m),
    }))
}

struct Counters {
    expired: Arc<Counter>,
    dead_letter: Arc<Counter>,
    /// Events of queue records the store had committed before a crash,
    /// delivered again and not stored twice.
    replayed: Arc<Counter>,
}

/// What a dry-run build returns: a checked config, no store behind it.
struct Unopened;

#[async_trait]
impl Sink for Unopened {
    async fn write(&mut self, _events: &[Event]) -> Result<(), BoxError> {
        Err("the store was not opened (configuration check only)".into())
    }
}

struct StoreSink {
    store: Arc<Store>,
    on_expired: OnExpired,
    dead_letter_path: Option<PathBuf>,
    counters: Counters,
    metrics: Arc<ComponentMetrics>,
}

impl StoreSink {
    /// Counts the batch's events expired on arrival and applies the policy:
    /// the events to store (`None`: all of them).
    async fn expired(&self, events: &[Event]) -> Result<Option<Vec<Event>>, BoxError> {
        let Some(cutoff) = self.store.retention_cutoff(sluice_core::event::now_ns()) else { return Ok(None) };
        let is_expired = |e: &&Event| self.store.expired(e.timestamp, cutoff);
        let Some(first) = events.iter().find(is_expired) else { return Ok(None) };
        let expired = events.iter().filter(is_expired).count() as u64;
        tracing::warn!(
            sink = %self.metrics.id, events = expired, first_event = %format_timestamp(first.timestamp),
            cutoff = %format_timestamp(cutoff), policy = ?self.on_expired,
            "events older than retention_age arrived (expired on arrival)"
        );
        match self.on_expired {
            OnExpired::KeepUntilPartitionAgesOut => {
                self.counters.expired.add(expired);
                return Ok(None);
            }
            OnExpired::Drop => self.metrics.events_dropped.add(expired),
            OnExpired::DeadLetter => {
                // INVARIANT: the build requires a path for this policy.
                let Some(path) = &self.dead_letter_path else { return Ok(None) };
                let why = format!(
                    "\"expired on arrival: its partition ended before the retention cutoff {}\"",
                    format_timestamp(cutoff)
                );
                let mut out = Vec::new();
                for e in events.iter().filter(is_expired) {
                    dead_letter::encode(&mut out, &[("error", &why)], e);
                }
                dead_letter::append(path, &out).await?;
                self.counters.dead_letter.add(expired);
            }
        }
        self.counters.expired.add(expired);
        Ok(Some(events.iter().filter(|e| !is_expired(e)).cloned().collect()))
    }
}

#[async_trait]
impl Sink for StoreSink {
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        let mut none = None;
        self.write_acked(events, &mut none).await
    }

    async fn write_acked(&mut self, events: &[Event], ack: &mut Option<AckToken>) -> Result<(), BoxError> {
        let store = Arc::clone(&self.store);
        let events = match self.expired(events).await? {
            None => events.to_vec(),
            Some(kept) => kept,
        };
        let mut token = ack.take();
        let (result, token) = tokio::task::spawn_blocking(move || {
            let r = store.append_owned(events, &mut token);
            (r, token)
        })
        .await?;
        // On error the store left the token with us: hand it back for the retry.
        *ack = token;
        let skipped = result?;
        self.counters.replayed.add(skipped as u64);
        Ok(())
    }

    async fn close(&mut self) -> Result<(), BoxError> {
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || store.commit()).await??;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::build_sink;
    use sluice_core::Delivery;
    use sluice_query::api::Search;
    use sluice_query::{Principal, Query, SourcePattern};

    #[tokio::test]
    async fn acks_after_commit_and_events_are_searchable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("st");
        let mut sink = build_sink(
            &SPEC,
            &format!("path = {:?}\ncommit_interval = \"100ms\"\ncommit_events = 1000", path.display().to_string()),
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut ack = Some(AckToken::new(move |d| tx.send(d).unwrap()));
        let events: Vec<Event> = (0..10).map(|i| Event::from_message(format!("sink event {i}"))).collect();
        sink.write_acked(&events, &mut ack).await.unwrap();
        assert!(ack.is_none(), "the sink takes the token");
        let d = tokio::task::spawn_blocking(move || rx.recv_timeout(std::time::Duration::from_secs(5))).await.unwrap();
        assert_eq!(d.unwrap(), Delivery::Delivered);
        let store = Store::get(&path).expect("shared instance");
        let s = Search {
            query: Query::Term { field: None, value: "sink".into() },
            range: Default::default(),
            size: 5,
            search_after: None,
            fields: None,
            order: Default::default(),
            sort: None,
        };
        let r = store.search_sync(&Principal::new("t", vec![SourcePattern::all()]), &s).unwrap();
        assert_eq!(r.total, 10);
        assert_eq!(r.hits.len(), 5);
        sink.close().await.unwrap();
    }

    /// Hits and misses of the store's result cache after the same terms
    /// aggregation twice over 10 committed events, with `extra` in the
    /// sink's config.
    async fn cache_counts_with(extra: &str) -> (u64, u64) {
        use sluice_query::api::Aggregate;
        use sluice_query::{Aggregation, SearchBackend};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("st");
        let mut sink = build_sink(&SPEC, &format!("path = {:?}\n{extra}", path.display().to_string())).unwrap();
        let events: Vec<Event> = (0..10).map(|i| Event::from_message(format!("sink event {i}"))).collect();
        sink.write(&events).await.unwrap();
        sink.close().await.unwrap();
        let store = Store::get(&path).expect("shared instance");
        let a = Aggregate {
            query: Query::All,
            range: Default::default(),
            aggs: [("h".to_string(), Aggregation::Terms { field: "@host".into(), size: None })].into(),
        };
        let p = Principal::new("t", vec![SourcePattern::all()]);
        for _ in 0..2 {
            assert_eq!(store.aggregate_sync(&p, &a).unwrap().total, 10);
        }
        let c = store.counters();
        let get = |n: &str| c.iter().find(|(k, _)| *k == n).map(|(_, v)| *v).unwrap();
        (get("sluice_store_result_cache_hits_total"), get("sluice_store_result_cache_misses_total"))
    }

    #[tokio::test]
    async fn result_cache_options_reach_the_store() {
        let (hits, misses) = cache_counts_with("").await;
        assert!(hits > 0 && misses > 0, "default: on ({hits} hits, {misses} misses)");
        assert_eq!(cache_counts_with("result_cache_bytes = 0").await, (0, 0), "bytes 0: off");
        assert_eq!(cache_counts_with("result_cache_entries = 0").await, (0, 0), "entries 0: off");
        let (hits, _) = cache_counts_with("result_cache_bytes = \"1MiB\"\nresult_cache_entries = 100").await;
        assert!(hits > 0, "small but on");
    }

    /// Issue #18: an event older than `retention_age` was acknowledged,
    /// counted as stored and deleted about 10 s later with only an INFO line.
    /// It is counted (`events_expired_on_arrival`) and `on_expired` decides.
    #[tokio::test]
    async fn issue_18_events_expired_on_arrival_are_counted_and_the_policy_applies() {
        let dir = tempfile::tempdir().unwrap();
        let now = sluice_core::event::now_ns();
        let day = 86_400_000_000_000i64;
        let batch: Vec<Event> = (0..8)
            .map(|i| {
                let mut e = Event::from_message(format!("event {i}"));
                // Three are from a week ago, past a 1-day retention.
                e.timestamp = if i % 3 == 0 { now - 7 * day } else { now };
                e
            })
            .collect();
        let search = |store: &Store| {
            let s = Search {
                query: Query::Term { field: None, value: "event".into() },
                range: Default::default(),
                size: 100,
                search_after: None,
                fields: None,
                order: sluice_query::Order::Newest,
                sort: None,
            };
            store.search_sync(&Principal::new("t", vec![SourcePattern::all()]), &s).unwrap().total
        };
        for (policy, stored, dropped, dead) in
            [("keep_until_partition_ages_out", 8, 0, 0), ("drop", 5, 3, 0), ("dead_letter", 5, 0, 3)]
        {
            let path = dir.path().join(policy);
            let dlq = dir.path().join(format!("{policy}.dead.ndjson"));
            let extra = if policy == "dead_letter" {
                format!("dead_letter_path = {:?}\n", dlq.display().to_string())
            } else {
                String::new()
            };
            let cx = BuildContext::for_test("sink", "store");
            let v: toml::Value = toml::from_str(&format!(
                "path = {:?}\ncommit_interval = \"50ms\"\nretention_age = \"1d\"\non_expired = \"{policy}\"\n{extra}",
                path.display().to_string()
            ))
            .unwrap();
            let mut sink = (SPEC.build)(v, &cx).unwrap();
            let (tx, rx) = std::sync::mpsc::channel();
            let mut ack = Some(AckToken::new(move |d| tx.send(d).unwrap()));
            sink.write_acked(&batch, &mut ack).await.unwrap();
            let d = tokio::task::spawn_blocking(move || rx.recv_timeout(std::time::Duration::from_secs(5))).await;
            assert_eq!(d.unwrap().unwrap(), Delivery::Delivered, "{policy}");
            let store = Store::get(&path).expect("shared instance");
            assert_eq!(search(&store), stored, "{policy}");
            assert_eq!(cx.metrics.counter("events_expired_on_arrival").get(), 3, "{policy}");
            assert_eq!(cx.metrics.events_dropped.get(), dropped, "{policy}");
            assert_eq!(cx.metrics.counter("dead_letter_events").get(), dead, "{policy}");
            let lines = std::fs::read_to_string(&dlq).unwrap_or_default();
            assert_eq!(lines.lines().count() as u64, dead, "{policy}");
            for l in lines.lines() {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                assert!(v["error"].as_str().unwrap().starts_with("expired on arrival"), "{v}");
                assert!(["event 0", "event 3", "event 6"].contains(&v["document"]["message"].as_str().unwrap()));
            }
            sink.close().await.unwrap();
        }
    }

    #[test]
    fn on_expired_needs_what_it_uses() {
        let e = build_sink(&SPEC, "path = \"/tmp/x\"\non_expired = \"drop\"").err().unwrap();
        assert_eq!(e.to_string(), "test.store.on_expired: needs retention_age (without it no event expires)");
        let e =
            build_sink(&SPEC, "path = \"/tmp/x\"\nretention_age = \"1d\"\non_expired = \"dead_letter\"").err().unwrap();
        assert_eq!(e.to_string(), "test.store.dead_letter_path: on_expired = \"dead_letter\" needs a dead_letter_path");
        let e = build_sink(&SPEC, "path = \"/tmp/x\"\ndead_letter_path = \"/tmp/d\"").err().unwrap();
        assert_eq!(e.to_string(), "test.store.dead_letter_path: is only used with on_expired = \"dead_letter\"");
    }

    #[test]
    fn bad_partition_is_a_config_error() {
        let e = build_sink(&SPEC, "path = \"/tmp/x\"\npartition = \"2d\"").err().unwrap();
        assert!(e.to_string().contains("partition"), "{e}");
    }

    #[test]
    fn writer_threads_out_of_range_is_a_config_error_naming_the_key() {
        let e = build_sink(&SPEC, "path = \"/tmp/x\"\nwriter_threads = 9").err().unwrap();
        assert!(e.to_string().contains("writer_threads") && e.to_string().contains("between 1 and 8"), "{e}");
    }

    #[test]
    fn search_threads_out_of_range_is_a_config_error_naming_the_key() {
        let e = build_sink(&SPEC, "path = \"/tmp/x\"\nsearch_threads = 0").err().unwrap();
        assert!(e.to_string().contains("search_threads") && e.to_string().contains("between 1 and 64"), "{e}");
    }
}
