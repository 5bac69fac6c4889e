//! `store`: indexes events into the embedded store (`sluice-store`), which
//! the HTTP search API reads.
//!
//! Acknowledgement: the sink takes over each batch's ack token and the
//! store resolves it only after the index commit that made the batch
//! durable (every `commit_interval`, as soon as `commit_events` are
//! pending, or when appends paused for 20 ms with at least 1024 events
//! pending — a queue waiting at its bound of unacknowledged events does not
//! wait for the timer). Indexing and commits run off the async executor
//! (blocking pool and the store's own threads).

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration};
use sluice_core::{AckToken, Event};
use sluice_store::{PartitionSpan, Store, StoreOptions};

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
    /// Memory of the search result cache (per-segment results of searches
    /// and aggregations over committed segments; default 64MiB; 0 turns it
    /// off).
    #[serde(default)]
    result_cache_bytes: Option<ByteSize>,
    /// Entries of the search result cache, at most (default 10000; 0 turns it off).
    #[serde(default)]
    result_cache_entries: Option<usize>,
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
    let path = c.path.unwrap_or_else(|| cx.data_dir.join("store"));
    let store = Store::open(&path, opts).map_err(|e| cx.error("path", e.to_string()))?;
    // Search and tail count stored events they show as a stand-in here.
    cx.metrics.share_counter("unrenderable_events", Arc::clone(&store.counters.unrenderable));
    Ok(Box::new(StoreSink { store }))
}

struct StoreSink {
    store: Arc<Store>,
}

#[async_trait]
impl Sink for StoreSink {
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        let mut none = None;
        self.write_acked(events, &mut none).await
    }

    async fn write_acked(&mut self, events: &[Event], ack: &mut Option<AckToken>) -> Result<(), BoxError> {
        let store = Arc::clone(&self.store);
        let events = events.to_vec();
        let mut token = ack.take();
        let (result, token) = tokio::task::spawn_blocking(move || {
            let r = store.append_owned(events, &mut token);
            (r, token)
        })
        .await?;
        // On error the store left the token with us: hand it back for the retry.
        *ack = token;
        result.map_err(|e| e.into())
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
}
