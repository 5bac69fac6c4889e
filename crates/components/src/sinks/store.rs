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
    if cx.dry_run {
        // `sluice validate`: an existing store must fit these options; a
        // missing one is created at start, not now.
        Store::check(&path, &opts).map_err(|e| cx.error("path", e.to_string()))?;
        return Ok(Box::new(Unopened));
    }
    let store = Store::open(&path, opts).map_err(|e| cx.error("path", e.to_string()))?;
    Ok(Box::new(StoreSink { store }))
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
        };
        let r = store.search_sync(&Principal::new("t", vec![SourcePattern::all()]), &s).unwrap();
        assert_eq!(r.total, 10);
        assert_eq!(r.hits.len(), 5);
        sink.close().await.unwrap();
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
